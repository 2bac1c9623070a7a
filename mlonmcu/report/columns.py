"""Report columns: one name each, everywhere (DESIGN.md). Add columns, never rename these.

Code writes report cells only through these constants, so a column cannot be misspelt into a
second, silently empty one.
"""

SESSION = "Session"
RUN = "Run"
MODEL = "Model"
FRONTEND = "Frontend"
FRAMEWORK = "Framework"
BACKEND = "Backend"
PLATFORM = "Platform"
TARGET = "Target"
FEATURES = "Features"
CONFIG = "Config"
SETUP_CYCLES = "Setup Cycles"
RUN_CYCLES = "Run Cycles"
TOTAL_CYCLES = "Total Cycles"
RUN_INSTRUCTIONS = "Run Instructions"
TOTAL_ROM = "Total ROM"
ROM_CODE = "ROM code"
ROM_READ_ONLY = "ROM read-only"
ROM_DATA = "ROM data"
TOTAL_RAM = "Total RAM"
RAM_DATA = "RAM data"
RAM_ZERO_INIT = "RAM zero-init data"
RAM_STACK = "RAM stack"
ARENA_SIZE = "Arena Size"
MODEL_SIZE = "Model Size"
MACS = "MACs"
VALIDATION = "Validation"
MAX_ABS_ERROR = "Max Abs Error"
FAILING = "Failing"
REASON = "Reason"
LOAD_TIME = "Load Stage Time [s]"
BUILD_TIME = "Build Stage Time [s]"
COMPILE_TIME = "Compile Stage Time [s]"
RUN_TIME_STAGE = "Run Stage Time [s]"

SETUP_INSTRUCTIONS = "Setup Instructions"  # init/allocation, like Setup Cycles
INSTRUCTIONS_PER_MAC = "Run Instructions/MAC"
ARENA_LOWER_BOUND = "Arena Lower Bound"  # largest set of activation tensors live at once in the model graph
COUNTER = "Counter"  # which counter produced cycles/instructions: minstret, wallclock, ...
# per inference: QEMU's instructions weighted by the core's published timings (Counter
# qemu-plugin+timing); an estimate, never mixed with the measured Run Cycles
ESTIMATED_CYCLES = "Estimated Cycles"
TIMING_MODEL = "Timing Model"  # which model estimated them (targets/timing.py, docs/timing.md)
# feature instruction_mix: executed instructions per class in one inference (QEMU's plugin)
INSTRUCTION_MIX = "Instruction Mix"  # the largest classes' shares, or why there is no mix
MIX_ALU = "Mix ALU"
MIX_LOAD = "Mix Load"
MIX_STORE = "Mix Store"
MIX_MULTIPLE = "Mix Load/Store Multiple"
MIX_MUL = "Mix Mul"
MIX_MAC = "Mix MAC"
MIX_DIV = "Mix Div"
MIX_BRANCH_TAKEN = "Mix Branch Taken"
MIX_BRANCH_NOT_TAKEN = "Mix Branch Not Taken"
MIX_JUMP = "Mix Jump/Call"
MIX_SIMD = "Mix SIMD/Vector"
MIX_CSR = "Mix CSR"
MIX_FP = "Mix FP"
MIX_OTHER = "Mix Other"
MIX = (
    MIX_ALU,
    MIX_LOAD,
    MIX_STORE,
    MIX_MULTIPLE,
    MIX_MUL,
    MIX_MAC,
    MIX_DIV,
    MIX_BRANCH_TAKEN,
    MIX_BRANCH_NOT_TAKEN,
    MIX_JUMP,
    MIX_SIMD,
    MIX_CSR,
    MIX_FP,
    MIX_OTHER,
)
SETUP_TIME = "Setup Time [s]"  # wall-clock targets only
RUN_TIME = "Run Time [s]"
RUN_TIME_MIN = "Run Time Min [s]"  # the fastest of the mlif.repeat inferences: what compare gates wall-clock on
STACK_USED = "Stack Used"  # peak stack measured by stack painting (bare-metal targets)
VALIDATION_DETAIL = "Validation Detail"
ORACLE = "Oracle"  # what computed the reference outputs validate compared with (models/reference.py)
FLOAT_OPS = "Float Ops"  # operators the integer lowering left in float (tvmaot.quant=integer)
PROFILE_KERNELS = "Profile Kernels"  # feature profile: kernels measured, their sum, the float share, the slowest
PROFILE_TOTAL = "Profile Total"
FLOAT_SHARE = "Float Share [%]"
SLOWEST_KERNEL = "Slowest Kernel"
PROFILE = "Profile"  # why there is no per-kernel table
SAMPLES = "Samples"
CACHED_STAGES = "Cached Stages"
LABEL = "Label"
MODEL_PATH = "Model Path"  # two models of one name from different places stay distinguishable
MODEL_HASH = "Model Hash"  # SHA-256 of the model file (first 16 hex digits)

CORE = (
    SESSION,
    RUN,
    MODEL,
    FRONTEND,
    FRAMEWORK,
    BACKEND,
    PLATFORM,
    TARGET,
    FEATURES,
    CONFIG,
    SETUP_CYCLES,
    RUN_CYCLES,
    TOTAL_CYCLES,
    RUN_INSTRUCTIONS,
    TOTAL_ROM,
    ROM_CODE,
    ROM_READ_ONLY,
    ROM_DATA,
    TOTAL_RAM,
    RAM_DATA,
    RAM_ZERO_INIT,
    RAM_STACK,
    ARENA_SIZE,
    MODEL_SIZE,
    MACS,
    VALIDATION,
    MAX_ABS_ERROR,
    FAILING,
    REASON,
    LOAD_TIME,
    BUILD_TIME,
    COMPILE_TIME,
    RUN_TIME_STAGE,
)

EXTRA = (
    SETUP_INSTRUCTIONS,
    INSTRUCTIONS_PER_MAC,
    ARENA_LOWER_BOUND,
    COUNTER,
    ESTIMATED_CYCLES,
    TIMING_MODEL,
    INSTRUCTION_MIX,
    *MIX,
    SETUP_TIME,
    RUN_TIME,
    RUN_TIME_MIN,
    STACK_USED,
    VALIDATION_DETAIL,
    ORACLE,
    FLOAT_OPS,
    PROFILE_KERNELS,
    PROFILE_TOTAL,
    FLOAT_SHARE,
    SLOWEST_KERNEL,
    PROFILE,
    SAMPLES,
    CACHED_STAGES,
    LABEL,
    MODEL_PATH,
    MODEL_HASH,
)

ALL = CORE + EXTRA

STAGE_TIME = {
    "LOAD": LOAD_TIME,
    "BUILD": BUILD_TIME,
    "COMPILE": COMPILE_TIME,
    "RUN": RUN_TIME_STAGE,
}

# Shown in the terminal table; the files get every column.
SUMMARY = (
    RUN,
    MODEL,
    FRONTEND,  # shown only where the rows differ in it (-F tflite -F onnx): report.summary
    BACKEND,
    TARGET,
    CONFIG,
    RUN_CYCLES,
    RUN_INSTRUCTIONS,
    ESTIMATED_CYCLES,
    INSTRUCTION_MIX,
    RUN_TIME,
    TOTAL_ROM,
    TOTAL_RAM,
    ARENA_SIZE,
    VALIDATION,
    MAX_ABS_ERROR,
    FAILING,
    REASON,
)
