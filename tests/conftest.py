"""Suite-wide setup."""

import signal


def pytest_configure(config):
    # A shell without job control starts a background job (`nohup make test &`) with SIGINT ignored, and every
    # process it starts inherits that; the tests that interrupt `patch apply`/`revert` with SIGINT would then wait
    # for a signal nobody hears. The suite runs as it does in the foreground: Python's own SIGINT handler here,
    # which exec resets to the default in the commands the tests start.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
