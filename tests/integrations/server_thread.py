"""A uvicorn server run in a thread for a test (helper module, not a test)."""

from __future__ import annotations

import contextlib
import threading
import time


@contextlib.contextmanager
def in_thread(server, sockets=None):
    """Run uvicorn ``server`` (on ``sockets`` if given) in a thread until the block ends; yields its port."""
    thread = threading.Thread(target=server.run, kwargs={"sockets": sockets}, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started:
        assert thread.is_alive() and time.time() < deadline, "the server did not start"
        time.sleep(0.02)
    try:
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)
