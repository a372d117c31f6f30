// Tokenizes a layer with the TextMate grammar (the engine VS Code uses) and checks the scopes
// of its words: `npm test` in editors/vscode.
const fs = require('fs');
const path = require('path');
const assert = require('assert');
const oniguruma = require('vscode-oniguruma');
const textmate = require('vscode-textmate');

async function main() {
  const wasm = fs.readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm')).buffer;
  await oniguruma.loadWASM(wasm);
  const registry = new textmate.Registry({
    onigLib: Promise.resolve({ createOnigScanner: (p) => new oniguruma.OnigScanner(p), createOnigString: (s) => new oniguruma.OnigString(s) }),
    loadGrammar: async () => textmate.parseRawGrammar(fs.readFileSync(path.join(__dirname, '..', 'syntaxes', 'prism.tmLanguage.json'), 'utf8'), 'prism.tmLanguage.json'),
  });
  const grammar = await registry.loadGrammar('source.prism');
  const lines = [
    '# Llama RMSNorm, then nn.Linear ([out, in] weight)',
    'program llama_proj(X: bf16[n, d], g: bf16[d], W: bf16[m, d]) {',
    '  Y = rms_norm(X, eps=1e-6) * g',
    '  return matmul(Y, transpose(W)) + sum(Y, axis=-1, keepdims=true)',
    '}',
  ];
  const scopes = {};
  let state = textmate.INITIAL;
  lines.forEach((line, i) => {
    const r = grammar.tokenizeLine(line, state);
    for (const t of r.tokens) scopes[`${i}:${line.slice(t.startIndex, t.endIndex)}`] = t.scopes[t.scopes.length - 1];
    state = r.ruleStack;
  });
  const expect = {
    '0:# Llama RMSNorm, then nn.Linear ([out, in] weight)': 'comment.line.number-sign.prism',
    '1:program': 'keyword.other.program.prism',
    '1:llama_proj': 'entity.name.function.prism',
    '1:bf16': 'storage.type.prism',
    '2:rms_norm': 'support.function.prism',
    '2:eps': 'variable.parameter.prism',
    '2:1e-6': 'constant.numeric.prism',
    '3:return': 'keyword.control.return.prism',
    '3:matmul': 'support.function.prism',
    '3:transpose': 'support.function.prism',
    '3:axis': 'variable.parameter.prism',
    '3:true': 'constant.language.boolean.prism',
    '2:  Y ': 'source.prism', // a value name stays plain
  };
  for (const [key, scope] of Object.entries(expect)) assert.strictEqual(scopes[key], scope, `${key}: ${scopes[key]}`);
  console.log(`grammar: ${Object.keys(expect).length} tokens scoped as expected`);
}

main().catch((e) => { console.error(e.message); process.exit(1); });
