-- Drives prismd --stdio from Neovim's own LSP client, with nothing prism-specific but
-- vim.lsp.start_client (issue 15). Run headless by tests/editors/nvim_test.cpp:
--   PRISMD=… PRISM_FILE=… PRISM_STATE=… PRISM_OUT=… nvim --headless -u NONE -i NONE -n -c "luafile nvim_lsp.lua"
-- It writes what it saw to $PRISM_OUT as JSON, then quits.
local results = {}

local function finish()
  local f = io.open(vim.env.PRISM_OUT, 'w')
  f:write(vim.fn.json_encode(results))
  f:close()
  vim.cmd('qall!')
end

local function run()
  vim.cmd('edit ' .. vim.fn.fnameescape(vim.env.PRISM_FILE))
  local buf = vim.api.nvim_get_current_buf()
  local client_id = vim.lsp.start_client({
    name = 'prismd',
    cmd = { vim.env.PRISMD, '--stdio', '--state-dir', vim.env.PRISM_STATE },
    root_dir = vim.fn.fnamemodify(vim.env.PRISM_FILE, ':h'),
  })
  results.started = client_id ~= nil
  vim.lsp.buf_attach_client(buf, client_id)

  -- Diagnostics appear on open: the file has an unknown op on line 3 (0-based 2).
  vim.wait(15000, function() return #vim.diagnostic.get(buf) > 0 end, 50)
  local diagnostics = vim.diagnostic.get(buf)
  results.diagnostics_on_open = #diagnostics
  results.first_diagnostic = diagnostics[1] and diagnostics[1].message or ''
  results.first_diagnostic_line = diagnostics[1] and diagnostics[1].lnum or -1

  -- Fixing the buffer clears them (an incremental didChange).
  vim.api.nvim_buf_set_lines(buf, 2, 3, false, { '  Y = rms_norm(X)' })
  vim.wait(15000, function() return #vim.diagnostic.get(buf) == 0 end, 50)
  results.diagnostics_after_fix = #vim.diagnostic.get(buf)

  local function request(method, params)
    params.textDocument = vim.lsp.util.make_text_document_params(buf)
    local answers = vim.lsp.buf_request_sync(buf, method, params, 10000) or {}
    local answer = answers[client_id] or {}
    if answer.err then results[method .. ' error'] = answer.err.message end
    return answer.result
  end

  -- Line 4 (0-based 3) is "  return matmul(Y, W)": Y at character 16, matmul at 9.
  local hover = request('textDocument/hover', { position = { line = 3, character = 16 } })
  results.hover = hover and hover.contents and hover.contents.value or ''

  local completion = request('textDocument/completion', { position = { line = 3, character = 9 } })
  local labels = {}
  for _, item in ipairs((completion and completion.items) or completion or {}) do labels[#labels + 1] = item.label end
  results.completion = labels

  local definition = request('textDocument/definition', { position = { line = 3, character = 16 } })
  if definition and definition[1] then definition = definition[1] end
  results.definition_line = definition and definition.range and definition.range.start.line or -1

  local symbols = request('textDocument/documentSymbol', {})
  results.symbols = {}
  for _, s in ipairs(symbols or {}) do results.symbols[#results.symbols + 1] = s.name end

  local hints = request('textDocument/inlayHint', {
    range = { start = { line = 0, character = 0 }, ['end'] = { line = 5, character = 0 } },
  })
  results.inlay_hints = {}
  for _, h in ipairs(hints or {}) do results.inlay_hints[#results.inlay_hints + 1] = h.label end

  -- Signature help inside matmul(Y, W), at the W.
  local signature = request('textDocument/signatureHelp', { position = { line = 3, character = 19 } })
  results.signature = signature and signature.signatures and signature.signatures[1].label or ''
  results.active_parameter = signature and signature.activeParameter or -1

  -- Code lenses: "search" and "tune n=2 d=16" (the sizes written above the program); running
  -- the search lens's command turns its title into the result.
  local function lens_titles()
    local titles = {}
    for _, l in ipairs(request('textDocument/codeLens', {}) or {}) do titles[#titles + 1] = l.command.title end
    return titles, request('textDocument/codeLens', {})
  end
  local titles, lenses = lens_titles()
  results.lenses = titles
  if lenses and lenses[1] then
    local answers = vim.lsp.buf_request_sync(buf, 'workspace/executeCommand', lenses[1].command, 60000) or {}
    local answer = answers[client_id] or {}
    if answer.err then results['executeCommand error'] = answer.err.message end
    results.search_candidates = answer.result and answer.result.candidates or -1
  end
  results.lenses_after_search = lens_titles()

  -- Formatting: a messy line comes back in the canonical layout.
  vim.api.nvim_buf_set_lines(buf, 3, 4, false, { '    return   matmul(Y,W)' })
  vim.lsp.buf.formatting_sync(nil, 10000)
  results.formatted_line = vim.api.nvim_buf_get_lines(buf, 3, 4, false)[1]

  vim.lsp.stop_client(client_id)
end

local ok, err = pcall(run)
if not ok then results.error = tostring(err) end
finish()
