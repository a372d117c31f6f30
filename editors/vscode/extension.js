// Starts prismd as the language server for .prism files. Everything else (diagnostics, hover,
// completion, signature help, inlay hints, code lenses and their commands) is standard LSP that
// vscode-languageclient handles: no prism-specific protocol code.
const vscode = require('vscode');
const { LanguageClient } = require('vscode-languageclient/node');

let client;

function activate(context) {
  const config = vscode.workspace.getConfiguration('prism');
  const command = config.get('server.path', 'prismd');
  const args = config.get('server.attach', true) ? ['--stdio', '--attach'] : ['--stdio'];
  client = new LanguageClient(
    'prismd',
    'prismd',
    { command, args },
    { documentSelector: [{ scheme: 'file', language: 'prism' }, { scheme: 'untitled', language: 'prism' }] }
  );
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
