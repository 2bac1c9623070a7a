"""Environment loading and HOME resolution."""

from mlonmcu.environment.environment import Environment
from mlonmcu.environment.home import init_home, resolve_home

__all__ = ["Environment", "init_home", "resolve_home"]
