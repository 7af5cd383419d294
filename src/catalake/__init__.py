"""catalake: an xRegistry message catalog turned into Delta tables, run by Dagster.

`catalake.CatalakeComponent` is the Dagster component (`dg scaffold defs catalake.CatalakeComponent
<name>`); it is imported on first use, so that the engine (`catalake.platform`) and the command
line do not pay Dagster's import."""


def __getattr__(name: str):
    if name == "CatalakeComponent":
        from catalake.component import CatalakeComponent

        return CatalakeComponent
    raise AttributeError(f"module 'catalake' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), "CatalakeComponent"])
