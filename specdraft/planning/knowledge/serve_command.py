"""The ``vllm serve`` command as data: every flag carries the reason it is there."""

from __future__ import annotations

import shlex

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

VLLM_CLI_MODULE = "vllm.entrypoints.cli.main"
"""What the ``vllm`` console script runs (entry point ``vllm.entrypoints.cli.main:main``, also runnable as
``__main__`` in every release 0.19-0.33). Run by the planned interpreter, it is the install that was located,
patched and checked, whatever ``vllm`` is first on PATH."""


class ServeFlag(BaseModel):
    """One ``vllm serve`` option."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """The option as typed, with its dashes: ``--kv-cache-dtype``."""
    value: str | None = None
    """Its argument; ``None`` for a switch such as ``--enable-prefix-caching``."""
    reason: str
    """One line: why the plan sets it (which fact, check or default)."""

    @field_validator("name")
    @classmethod
    def _is_long_option(cls, name: str) -> str:
        if not name.startswith("--") or len(name) < 3 or " " in name:
            raise ValueError(f"name: a vLLM option looks like '--max-model-len', got {name!r}")
        return name

    def tokens(self) -> list[str]:
        return [self.name] if self.value is None else [self.name, self.value]


class ServePlan(BaseModel):
    """Everything ``vllm serve`` is started with; ``argv()`` renders it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    """The target checkpoint, passed positionally: a local directory or a Hugging Face repo id."""
    flags: list[ServeFlag] = Field(default_factory=list)
    """Options in the order they are emitted. A name appears at most once."""
    extra_args: list[str] = Field(default_factory=list)
    """Arguments the user gave after ``--``, appended verbatim."""

    @field_validator("flags")
    @classmethod
    def _names_are_unique(cls, flags: list[ServeFlag]) -> list[ServeFlag]:
        seen: set[str] = set()
        for flag in flags:
            if flag.name in seen:
                raise ValueError(f"flags: {flag.name} appears twice")
            seen.add(flag.name)
        return flags

    def argv(self) -> list[str]:
        """The full command as a list, starting ``vllm``, ``serve``."""
        tokens = ["vllm", "serve", self.model]
        for flag in self.flags:
            tokens.extend(flag.tokens())
        return tokens + list(self.extra_args)

    def shell_command(self) -> str:
        """``argv()`` quoted for a POSIX shell; safe for paths with spaces or metacharacters."""
        return shlex.join(self.argv())

    def flag(self, name: str) -> ServeFlag | None:
        return next((f for f in self.flags if f.name == name), None)


def describe_validation_error(err: ValidationError) -> str:
    """One line naming each bad field and value, for the person at the terminal."""
    parts = []
    for item in err.errors():
        where = ".".join(str(p) for p in item["loc"])
        message = item["msg"].removeprefix("Value error, ")
        if "input" in item and item["type"] != "value_error":
            message += f" (got {item['input']!r})"
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)
