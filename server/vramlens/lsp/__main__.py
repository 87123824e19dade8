import sys

from vramlens.lsp.server import serve

sys.exit(serve())
