from chat_server import chat_server  # noqa: F401  (the fixture every backend test here may use)
