from vramlens.lsp.server import serve

serve()
