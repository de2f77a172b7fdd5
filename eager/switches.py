"""On/off switches read from the environment (`GRAPHJIT_NATIVE`, `GRAPHJIT_RECYCLE`, ...): one parser, one error.

Imports the standard library only.
"""
from __future__ import annotations

import os


def env_flag(name: str, default: bool = True) -> bool:
    """The switch `name` from the environment: unset or empty gives `default`, "0" off, "1" on."""
    env = os.environ.get(name, "")
    if env not in ("", "0", "1"):
        raise ValueError(f"{name} must be 0 or 1, got {env!r}")
    return default if env == "" else env == "1"


class Switch:
    """A process-wide on/off setting whose default is the environment variable `env` (`env_flag`), else `default`.

    `value` is the setting (None until first read: then the default); `set` checks its argument.
    """

    def __init__(self, env: str, caller: str, default: bool = True):
        self.env, self.caller, self.value, self.default = env, caller, None, default

    def get(self) -> bool:
        if self.value is None:
            self.value = env_flag(self.env, self.default)
        return self.value

    def set(self, flag: bool | None) -> bool:
        """On, off, or None (the default again); returns the previous setting."""
        if flag is not None and type(flag) is not bool:
            raise ValueError(f"{self.caller}: flag must be a bool or None, got {flag!r}")
        old = self.get()
        self.value = env_flag(self.env, self.default) if flag is None else flag
        return old
