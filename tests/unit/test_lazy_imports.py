"""What a session's process loads: a cached rerun is well under a second, and pandas (~0.35 s),
SQLAlchemy (~0.6 s, the recorder's) or TVM would be most of it."""

import subprocess
import sys

SESSION_MODULES = [
    "mlonmcu.api",
    "mlonmcu.cli.main",
    "mlonmcu.cli.output",
    "mlonmcu.session.session",
    "mlonmcu.session.plan",
    "mlonmcu.results.transfer",
    "mlonmcu.results.recorder",
    "mlonmcu.registry",
]


def test_the_session_path_loads_neither_pandas_nor_sqlalchemy_nor_tvm():
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in SESSION_MODULES)
        + "from mlonmcu import registry\n"
        + "registry.load_plugins()\n"
        + "print(sorted(m for m in ('pandas', 'sqlalchemy', 'tvm', 'jinja2') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout
