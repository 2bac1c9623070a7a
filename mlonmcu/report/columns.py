"""Report columns: one name each, everywhere (DESIGN.md). Add columns, never rename these."""

CORE = (
    "Session",
    "Run",
    "Model",
    "Frontend",
    "Framework",
    "Backend",
    "Platform",
    "Target",
    "Features",
    "Config",
    "Setup Cycles",
    "Run Cycles",
    "Total Cycles",
    "Run Instructions",
    "Total ROM",
    "ROM code",
    "ROM read-only",
    "ROM data",
    "Total RAM",
    "RAM data",
    "RAM zero-init data",
    "RAM stack",
    "Arena Size",
    "Model Size",
    "MACs",
    "Validation",
    "Max Abs Error",
    "Failing",
    "Reason",
    "Load Stage Time [s]",
    "Build Stage Time [s]",
    "Compile Stage Time [s]",
    "Run Stage Time [s]",
)

EXTRA = (
    "Setup Instructions",  # init/allocation, like Setup Cycles
    "Run Instructions/MAC",
    "Arena Lower Bound",  # largest set of activation tensors live at once in the model graph
    "Counter",  # which counter produced cycles/instructions: minstret, wallclock, ...
    "Setup Time [s]",  # wall-clock targets only
    "Run Time [s]",
    "Stack Used",  # peak stack measured by stack painting (bare-metal targets)
    "Validation Detail",
    "Float Ops",  # operators the integer lowering left in float (tvmaot.quant=integer)
    "Profile Kernels",  # feature profile: kernels measured, their sum, the float share, the slowest
    "Profile Total",
    "Float Share [%]",
    "Slowest Kernel",
    "Samples",
    "Cached Stages",
    "Label",
)

ALL = CORE + EXTRA

STAGE_TIME = {
    "LOAD": "Load Stage Time [s]",
    "BUILD": "Build Stage Time [s]",
    "COMPILE": "Compile Stage Time [s]",
    "RUN": "Run Stage Time [s]",
}

# Shown in the terminal table; the files get every column.
SUMMARY = (
    "Run",
    "Model",
    "Backend",
    "Target",
    "Config",
    "Run Cycles",
    "Run Instructions",
    "Run Time [s]",
    "Total ROM",
    "Total RAM",
    "Arena Size",
    "Validation",
    "Max Abs Error",
    "Failing",
    "Reason",
)
