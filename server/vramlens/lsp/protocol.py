"""The JSON-RPC side of the server: pygls' protocol, with the lifecycle LSP asks for and long commands' needs."""

from __future__ import annotations

import contextvars

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidRequest, JsonRpcServerNotInitialized
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from vramlens.lsp.json_values import finite_json

# The ExecuteCommandParams of the command being run: pygls hands a command only its arguments,
# and a long command also needs the request's workDoneToken.
command_params: contextvars.ContextVar[types.ExecuteCommandParams | None] = contextvars.ContextVar(
    "command_params", default=None
)


class VramLensProtocol(LanguageServerProtocol):
    """pygls' protocol with two additions for long-running commands, and the lifecycle LSP asks for
    where pygls 2.1 does otherwise: a request before ``initialize`` is answered ServerNotInitialized
    (-32002), not run; one after ``shutdown`` is answered InvalidRequest, not dropped unanswered; an
    error's ``data`` never carries a traceback; and the JSON sent is always valid (no NaN)."""

    _initialize_seen = False

    def lifecycle_refusal(self, method) -> JsonRpcException | None:
        """The error for a message that comes out of its time (before initialize, after shutdown), else None."""
        if method == types.INITIALIZE:
            self._initialize_seen = True
        elif method != types.EXIT and (self._shutdown or not self._initialize_seen):
            return (JsonRpcInvalidRequest("The server has been shut down: it answers no more requests.")
                    if self._shutdown else JsonRpcServerNotInitialized("The server is not initialized yet."))
        return None

    def handle_message(self, message):
        method = getattr(message, "method", None)
        refusal = self.lifecycle_refusal(method) if method is not None else None
        if refusal is not None:
            if getattr(message, "id", None) is not None:
                self._send_response(message.id, None, refusal.to_response_error())
            return  # a notification out of its time is dropped, as LSP says
        super().handle_message(message)

    def _send_response(self, msg_id, result=None, error=None):
        if error is not None and error.data is not None:
            # pygls puts the Python traceback of a failed handler in ``data``: the client gets the sentence only.
            error = types.ResponseError(code=error.code, message=error.message.splitlines()[0][:500] if error.message else "")
        super()._send_response(msg_id, result, error)

    def _send_data(self, data):
        super()._send_data(finite_json(data, self._serialize_message))

    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(self, params: types.ExecuteCommandParams):
        command_params.set(params)
        return (yield from super().lsp_workspace__execute_command(params))

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args):
        """pygls' own, but cancelling the other requests over a copy of their table: a cancelled
        request's callback removes it from the table, and pygls' loop over the table itself then
        fails, answering shutdown with an internal error."""
        if (user_handler := self.fm.features.get(types.SHUTDOWN)) is not None:
            yield user_handler, args, None
        current_id = self.msg_id
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current_id and not future.done():
                future.cancel()
        self._shutdown = True
        return None

    def _handle_cancel_notification(self, msg_id) -> None:
        """A command that ends its work cleanly on cancellation (the run keeps its capture) is told
        so and answers with its own result; any other request is cancelled as pygls does."""
        event = self._server.cancellable_commands.get(msg_id)
        load = self._server.loading.get(msg_id)
        if load is not None:
            load.cancel()  # its worker process is killed; the command answers that it was cancelled
        if event is not None:
            event.set()
            return
        if load is None:
            super()._handle_cancel_notification(msg_id)
