"""Goes away with the driver rewrite: janus/driver/function.py still imports USER_ASSERT_MESSAGE from here."""
from janus.runtime.checks import USER_ASSERT_MESSAGE  # noqa
