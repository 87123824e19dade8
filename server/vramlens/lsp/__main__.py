import sys

from vramlens.lsp.app import serve

sys.exit(serve())
