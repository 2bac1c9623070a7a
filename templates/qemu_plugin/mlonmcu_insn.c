/*
 * mlonmcu instruction counter for QEMU's TCG plugin interface (API version 1, as loaded by
 * QEMU 7.2), for Arm (Cortex-M boards) and riscv32 (virt). Debian ships no plugin headers, so
 * the few declarations needed are made here.
 *
 * Counts executed guest instructions (one inline add per translation block) and puts each in
 * an instruction class by its mnemonic (QEMU's disassembler); the classes partition the
 * instructions. It also counts events that cost time but are not instructions of their own:
 * conditional branches taken / not taken (a block that ends in one is followed by a block that
 * starts elsewhere than where it falls through), and per architecture what a timing model needs
 * (Arm: registers of LDM/STM/PUSH/POP lists, pipeline refills; RISC-V: a load whose result the
 * next instruction uses, a jump or taken branch to a 32-bit instruction that is not 4-byte
 * aligned). Whenever the instruction at `mark=ADDRESS` (the firmware's mlonmcu_mark) starts,
 * it prints to QEMU's log
 *     MLONMCU MARK <index> <instructions before it> <class or event>=<count before it> ...
 * (counts that are still 0 left out). Differences between marks are exact counts; mlonmcu
 * weighs them with a core's timing model (mlonmcu/targets/timing.py) into estimated cycles.
 *
 * Usage: qemu-system-arm ... -plugin libmlonmcu_insn.so,mark=0x1234 -d plugin -D log.txt
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;

typedef struct {
  const char *target_name;
  struct {
    int min;
    int cur;
  } version;
  bool system_emulation;
  union {
    struct {
      int smp_vcpus;
      int max_vcpus;
    } system;
  };
} qemu_info_t;

struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op, void *ptr,
                                              uint64_t imm);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_udata_cb_t cb,
                                            enum qemu_plugin_cb_flags flags, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
void qemu_plugin_outs(const char *string);
char *qemu_plugin_insn_disas(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void *userdata);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

static uint64_t executed; /* instructions of every translation block entered so far */
static uint64_t mark_address;
static uint64_t marks;

/* -- classes and events, per architecture --------------------------------------------------------- */

#define MAX_EVENTS 40
static const char *const arm_names[] = {
    /* instruction classes */
    "alu", "dsp", "vector", "mul", "mac", "long_mul", "long_mac", "dsp_mul", "div", "load", "store",
    "load_pipelined", "store_pipelined", "load_double", "store_double", "multiple", "branch", "call",
    "table_branch", "fp", "fp_mac", "fp_div", "fp_memory", "fp_multiple",
    /* events */
    "cond_taken", "cond_not_taken", "list_registers", "refill"};
enum arm_event {
  A_ALU, A_DSP, A_VECTOR, A_MUL, A_MAC, A_LONG_MUL, A_LONG_MAC, A_DSP_MUL, A_DIV, A_LOAD, A_STORE,
  A_LOAD_PIPELINED, A_STORE_PIPELINED, A_LOAD_DOUBLE, A_STORE_DOUBLE, A_MULTIPLE, A_BRANCH, A_CALL,
  A_TABLE_BRANCH, A_FP, A_FP_MAC, A_FP_DIV, A_FP_MEMORY, A_FP_MULTIPLE,
  A_COND_TAKEN, A_COND_NOT_TAKEN, A_LIST_REGISTERS, A_REFILL, A_COUNT
};
static const char *const riscv_names[] = {
    /* instruction classes */
    "alu", "csr", "load", "store", "mul", "mulh", "div", "branch", "jump", "vector", "fp", "system",
    /* events */
    "cond_taken", "cond_not_taken", "load_use", "unaligned_target"};
enum riscv_event {
  R_ALU, R_CSR, R_LOAD, R_STORE, R_MUL, R_MULH, R_DIV, R_BRANCH, R_JUMP, R_VECTOR, R_FP, R_SYSTEM,
  R_COND_TAKEN, R_COND_NOT_TAKEN, R_LOAD_USE, R_UNALIGNED_TARGET, R_COUNT
};

static bool riscv;
static const char *const *event_names = arm_names;
static int event_count = A_COUNT;
static int cond_taken = A_COND_TAKEN, cond_not_taken = A_COND_NOT_TAKEN;
static uint64_t counts[MAX_EVENTS]; /* of every block entered so far */

struct mnemonic {
  const char *name;
  int klass;
};

static int lookup(const struct mnemonic *table, size_t size, const char *name) {
  for (size_t i = 0; i < size; i++) {
    if (strcmp(table[i].name, name) == 0) {
      return table[i].klass;
    }
  }
  return -1;
}

/* What one instruction adds, as the translator sees it. */
struct decoded {
  int klass;
  bool conditional; /* a branch that may fall through */
  bool transfer;    /* always leaves the straight line (jump, call, unconditional branch) */
  uint64_t extra[MAX_EVENTS];
};

/* ---- Arm -------------------------------------------------------------------------------------- */

/* Mnemonics without width (.w/.n) or data type (.f32) suffix; anything not listed is `alu`. */
static const struct mnemonic arm_mnemonics[] = {
    {"mul", A_MUL}, {"muls", A_MUL}, {"mla", A_MAC}, {"mls", A_MAC},
    {"smull", A_LONG_MUL}, {"umull", A_LONG_MUL}, {"smlal", A_LONG_MAC}, {"umlal", A_LONG_MAC},
    {"umaal", A_LONG_MAC}, {"smlald", A_LONG_MAC}, {"smlaldx", A_LONG_MAC}, {"smlsld", A_LONG_MAC},
    {"smlsldx", A_LONG_MAC}, {"smlalbb", A_LONG_MAC}, {"smlalbt", A_LONG_MAC}, {"smlaltb", A_LONG_MAC},
    {"smlaltt", A_LONG_MAC}, {"smlad", A_DSP_MUL}, {"smladx", A_DSP_MUL}, {"smlsd", A_DSP_MUL},
    {"smlsdx", A_DSP_MUL}, {"smuad", A_DSP_MUL}, {"smuadx", A_DSP_MUL}, {"smusd", A_DSP_MUL},
    {"smusdx", A_DSP_MUL}, {"smlabb", A_DSP_MUL}, {"smlabt", A_DSP_MUL}, {"smlatb", A_DSP_MUL},
    {"smlatt", A_DSP_MUL}, {"smlawb", A_DSP_MUL}, {"smlawt", A_DSP_MUL}, {"smulbb", A_DSP_MUL},
    {"smulbt", A_DSP_MUL}, {"smultb", A_DSP_MUL}, {"smultt", A_DSP_MUL}, {"smulwb", A_DSP_MUL},
    {"smulwt", A_DSP_MUL}, {"smmul", A_DSP_MUL}, {"smmulr", A_DSP_MUL}, {"smmla", A_DSP_MUL},
    {"smmlar", A_DSP_MUL}, {"smmls", A_DSP_MUL}, {"smmlsr", A_DSP_MUL}, {"sdiv", A_DIV}, {"udiv", A_DIV},
    {"ldr", A_LOAD}, {"ldrb", A_LOAD}, {"ldrh", A_LOAD}, {"ldrsb", A_LOAD}, {"ldrsh", A_LOAD},
    {"ldrex", A_LOAD}, {"ldrexb", A_LOAD}, {"ldrexh", A_LOAD}, {"ldrt", A_LOAD}, {"ldrbt", A_LOAD},
    {"ldrht", A_LOAD}, {"ldrsbt", A_LOAD}, {"ldrsht", A_LOAD}, {"str", A_STORE}, {"strb", A_STORE},
    {"strh", A_STORE}, {"strex", A_STORE}, {"strexb", A_STORE}, {"strexh", A_STORE}, {"strt", A_STORE},
    {"strbt", A_STORE}, {"strht", A_STORE}, {"ldrd", A_LOAD_DOUBLE}, {"strd", A_STORE_DOUBLE},
    {"ldm", A_MULTIPLE}, {"ldmia", A_MULTIPLE}, {"ldmfd", A_MULTIPLE}, {"ldmdb", A_MULTIPLE},
    {"ldmea", A_MULTIPLE}, {"stm", A_MULTIPLE}, {"stmia", A_MULTIPLE}, {"stmea", A_MULTIPLE},
    {"stmdb", A_MULTIPLE}, {"stmfd", A_MULTIPLE}, {"push", A_MULTIPLE}, {"pop", A_MULTIPLE},
    {"b", A_BRANCH}, {"cbz", A_BRANCH}, {"cbnz", A_BRANCH}, {"bl", A_CALL}, {"blx", A_CALL}, {"bx", A_CALL},
    {"tbb", A_TABLE_BRANCH}, {"tbh", A_TABLE_BRANCH},
    {"vmla", A_FP_MAC}, {"vmls", A_FP_MAC}, {"vnmla", A_FP_MAC}, {"vnmls", A_FP_MAC}, {"vfma", A_FP_MAC},
    {"vfms", A_FP_MAC}, {"vfnma", A_FP_MAC}, {"vfnms", A_FP_MAC}, {"vdiv", A_FP_DIV}, {"vsqrt", A_FP_DIV},
    {"vldr", A_FP_MEMORY}, {"vstr", A_FP_MEMORY}, {"vldm", A_FP_MULTIPLE}, {"vldmia", A_FP_MULTIPLE},
    {"vldmdb", A_FP_MULTIPLE}, {"vstm", A_FP_MULTIPLE}, {"vstmia", A_FP_MULTIPLE},
    {"vstmdb", A_FP_MULTIPLE}, {"vpush", A_FP_MULTIPLE}, {"vpop", A_FP_MULTIPLE},
    /* the DSP extension's SIMD arithmetic on packed bytes and halfwords (single-cycle, like alu) */
    {"sadd16", A_DSP}, {"sadd8", A_DSP}, {"ssub16", A_DSP}, {"ssub8", A_DSP}, {"uadd16", A_DSP},
    {"uadd8", A_DSP}, {"usub16", A_DSP}, {"usub8", A_DSP}, {"qadd16", A_DSP}, {"qadd8", A_DSP},
    {"qsub16", A_DSP}, {"qsub8", A_DSP}, {"shadd16", A_DSP}, {"shadd8", A_DSP}, {"sasx", A_DSP},
    {"ssax", A_DSP}, {"sxtb16", A_DSP}, {"sxtab16", A_DSP}, {"uxtb16", A_DSP}, {"uxtab16", A_DSP},
    {"pkhbt", A_DSP}, {"pkhtb", A_DSP}, {"sel", A_DSP}, {"ssat16", A_DSP}, {"usat16", A_DSP},
    {"usad8", A_DSP}, {"usada8", A_DSP},
};
static const char *const conditions[] = {"eq", "ne", "cs", "hs", "cc", "lo", "mi", "pl", "vs",
                                         "vc", "hi", "ls", "ge", "lt", "gt", "le", "al"};

/* Registers in a {list}: `{r4, r5, lr}` is 3; a double register counts as 2 words. */
static uint64_t list_registers(const char *text) {
  const char *open = strchr(text, '{');
  if (open == NULL) {
    return 1;
  }
  uint64_t count = 1;
  bool doubles = open[1] == 'd';
  for (const char *c = open; *c != '\0' && *c != '}'; c++) {
    count += *c == ',';
  }
  return doubles ? 2 * count : count;
}

/* The class of an Arm mnemonic (`previous`: the class of the instruction before it in the block). */
static void decode_arm(const char *text, int previous, struct decoded *d) {
  char name[16] = {0};
  size_t n = 0;
  while (text[n] != '\0' && text[n] != ' ' && text[n] != '.' && n + 1 < sizeof(name)) {
    name[n] = text[n];
    n++;
  }
  const size_t size = sizeof(arm_mnemonics) / sizeof(arm_mnemonics[0]);
  d->conditional = strcmp(name, "cbz") == 0 || strcmp(name, "cbnz") == 0;
  int k = lookup(arm_mnemonics, size, name);
  if (k < 0 && n > 2) { /* b<cc>: the only conditional forms outside IT blocks */
    for (size_t i = 0; i < sizeof(conditions) / sizeof(conditions[0]) && k < 0; i++) {
      if (strcmp(name + n - 2, conditions[i]) == 0) {
        char stem[16] = {0};
        memcpy(stem, name, n - 2);
        if (lookup(arm_mnemonics, size, stem) == A_BRANCH) {
          k = A_BRANCH;
          d->conditional = strcmp(conditions[i], "al") != 0;
        }
      }
    }
  }
  if (k < 0) {
    /* MVE (Helium) works on integer lanes (.s8, .i16, ...); the FPU's instructions name a float
     * type (.f32, vcvt.s32.f32) or none */
    bool lanes = text[n] == '.';
    for (const char *c = text + n; *c != '\0' && *c != ' ' && *c != '\t'; c++) {
      lanes = lanes && *c != 'f';
    }
    k = name[0] == 'v' ? (lanes ? A_VECTOR : A_FP) : A_ALU;
  }
  bool after_single_transfer = previous == A_LOAD || previous == A_STORE || previous == A_LOAD_PIPELINED ||
                               previous == A_STORE_PIPELINED;
  if (k == A_LOAD && after_single_transfer) {
    k = A_LOAD_PIPELINED;
  } else if (k == A_STORE && after_single_transfer) {
    k = A_STORE_PIPELINED;
  }
  d->klass = k;
  if (k == A_MULTIPLE || k == A_FP_MULTIPLE) {
    d->extra[A_LIST_REGISTERS] = list_registers(text);
  }
  bool pops_pc = k == A_MULTIPLE && strstr(text, "pc}") != NULL && (strncmp(text, "pop", 3) == 0 || strncmp(text, "ldm", 3) == 0);
  if (pops_pc || k == A_CALL || k == A_TABLE_BRANCH || (k == A_BRANCH && !d->conditional)) {
    d->extra[A_REFILL] = 1; /* the pipeline refills at the new address */
    d->transfer = true;
  }
}

/* ---- RISC-V ------------------------------------------------------------------------------------ */

/* QEMU prints compressed instructions expanded (c.lw as lw) and pseudo-instructions by name. */
static const struct mnemonic riscv_mnemonics[] = {
    {"lb", R_LOAD}, {"lh", R_LOAD}, {"lw", R_LOAD}, {"lbu", R_LOAD}, {"lhu", R_LOAD}, {"flw", R_LOAD},
    {"fld", R_LOAD}, {"sb", R_STORE}, {"sh", R_STORE}, {"sw", R_STORE}, {"fsw", R_STORE}, {"fsd", R_STORE},
    {"mul", R_MUL}, {"mulh", R_MULH}, {"mulhsu", R_MULH}, {"mulhu", R_MULH}, {"div", R_DIV}, {"divu", R_DIV},
    {"rem", R_DIV}, {"remu", R_DIV}, {"beq", R_BRANCH}, {"bne", R_BRANCH}, {"blt", R_BRANCH},
    {"bge", R_BRANCH}, {"bltu", R_BRANCH}, {"bgeu", R_BRANCH}, {"beqz", R_BRANCH}, {"bnez", R_BRANCH},
    {"blez", R_BRANCH}, {"bgez", R_BRANCH}, {"bltz", R_BRANCH}, {"bgtz", R_BRANCH}, {"bgt", R_BRANCH},
    {"ble", R_BRANCH}, {"bgtu", R_BRANCH}, {"bleu", R_BRANCH}, {"jal", R_JUMP}, {"jalr", R_JUMP},
    {"j", R_JUMP}, {"jr", R_JUMP}, {"ret", R_JUMP}, {"call", R_JUMP}, {"tail", R_JUMP},
    {"ecall", R_SYSTEM}, {"ebreak", R_SYSTEM}, {"mret", R_SYSTEM}, {"wfi", R_SYSTEM}, {"fence", R_SYSTEM},
    {"fence.i", R_SYSTEM},
};

/* The registers an instruction names after its mnemonic, in order (`lw a5,12(a4)`: a5, a4). */
static size_t riscv_operands(const char *text, char regs[][8], size_t max) {
  size_t found = 0;
  const char *c = text;
  while (*c != '\0' && *c != '#' && found < max) {
    while (*c == ' ' || *c == '\t' || *c == ',' || *c == '(' || *c == ')') {
      c++;
    }
    size_t n = 0;
    char token[8] = {0};
    while (*c != '\0' && *c != ' ' && *c != '\t' && *c != ',' && *c != '(' && *c != ')' && *c != '#') {
      if (n + 1 < sizeof(token)) {
        token[n++] = *c;
      }
      c++;
    }
    if (n > 0 && ((token[0] >= 'a' && token[0] <= 'z') || token[0] == 'z')) {
      memcpy(regs[found++], token, sizeof(token));
    }
  }
  return found;
}

struct riscv_insn {
  char name[16];
  char regs[4][8];
  size_t n_regs;
};

static void split_riscv(const char *text, struct riscv_insn *out) {
  const char *c = text;
  while (*c != '\0' && *c != ' ' && *c != '\t') { /* the encoding, in hex */
    c++;
  }
  while (*c == ' ' || *c == '\t') {
    c++;
  }
  size_t n = 0;
  while (c[n] != '\0' && c[n] != ' ' && c[n] != '\t' && n + 1 < sizeof(out->name)) {
    out->name[n] = c[n];
    n++;
  }
  out->name[n] = '\0';
  out->n_regs = riscv_operands(c + n, out->regs, 4);
}

static int riscv_class(const char *name) {
  int k = lookup(riscv_mnemonics, sizeof(riscv_mnemonics) / sizeof(riscv_mnemonics[0]), name);
  if (k >= 0) {
    return k;
  }
  if (strncmp(name, "csr", 3) == 0) {
    return R_CSR;
  }
  if (name[0] == 'v') {
    return R_VECTOR;
  }
  if (name[0] == 'f') {
    return R_FP;
  }
  return R_ALU;
}

/* Whether `next` reads register `reg` (stores and branches read every register they name). */
static bool reads(const struct riscv_insn *next, int next_class, const char *reg) {
  if (strcmp(next->name, "ret") == 0) {
    return strcmp(reg, "ra") == 0;
  }
  bool all_sources = next_class == R_STORE || next_class == R_BRANCH || strcmp(next->name, "jr") == 0;
  for (size_t i = all_sources ? 0 : 1; i < next->n_regs; i++) {
    if (strcmp(next->regs[i], reg) == 0) {
      return true;
    }
  }
  return false;
}

static void decode_riscv(const struct riscv_insn *insn, const struct riscv_insn *next, struct decoded *d) {
  int k = riscv_class(insn->name);
  d->klass = k;
  d->conditional = k == R_BRANCH;
  d->transfer = k == R_JUMP;
  if (k == R_LOAD && next != NULL && insn->n_regs > 0 && reads(next, riscv_class(next->name), insn->regs[0])) {
    d->extra[R_LOAD_USE] = 1;
  }
}

/* -- blocks ---------------------------------------------------------------------------------------- */

struct pair {
  int event;
  uint64_t count;
};
struct block {
  uint64_t start;
  uint64_t fallthrough; /* where it continues when its last instruction, a conditional branch, is not taken */
  bool conditional;     /* it ends in a conditional branch */
  bool transfer;        /* it ends in a jump */
  bool unaligned;       /* its first instruction is 32 bits wide at an address that is 2 mod 4 */
  size_t n_pairs;
  struct pair pairs[]; /* what running it adds (instructions' classes and static events) */
};
struct mark {
  uint64_t insns;              /* of the mark's block from the mark onwards: counted on entry, not yet run */
  uint64_t counts[MAX_EVENTS]; /* the same, per class and event */
};

static const struct block *previous_block;

static void on_block(unsigned int vcpu_index, void *userdata) {
  (void)vcpu_index;
  const struct block *b = userdata;
  const struct block *p = previous_block;
  if (p != NULL) {
    bool taken = p->transfer;
    if (p->conditional) {
      taken = b->start != p->fallthrough;
      counts[taken ? cond_taken : cond_not_taken]++;
      if (taken && !riscv) {
        counts[A_REFILL]++;
      }
    }
    if (riscv && taken && b->unaligned) {
      counts[R_UNALIGNED_TARGET]++;
    }
  }
  previous_block = b;
  for (size_t i = 0; i < b->n_pairs; i++) {
    counts[b->pairs[i].event] += b->pairs[i].count;
  }
}

/* -- marks and translation ------------------------------------------------------------------------ */

static void on_mark(unsigned int vcpu_index, void *userdata) {
  (void)vcpu_index;
  /* The block's counters already include it from the mark onwards. */
  const struct mark *m = userdata;
  char text[64 + MAX_EVENTS * 40];
  int used = snprintf(text, sizeof(text), "MLONMCU MARK %" PRIu64 " %" PRIu64, marks++, executed - m->insns);
  for (int e = 0; e < event_count && used > 0 && (size_t)used < sizeof(text); e++) {
    uint64_t value = counts[e] - m->counts[e];
    if (value != 0) {
      used += snprintf(text + used, sizeof(text) - (size_t)used, " %s=%" PRIu64, event_names[e], value);
    }
  }
  if (used > 0 && (size_t)used + 1 < sizeof(text)) {
    text[used] = '\n';
    text[used + 1] = '\0';
  }
  qemu_plugin_outs(text);
}

static void *checked(void *pointer) {
  if (pointer == NULL) {
    fprintf(stderr, "mlonmcu_insn: out of memory\n");
    abort();
  }
  return pointer;
}

static void on_translation(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  (void)id;
  size_t count = qemu_plugin_tb_n_insns(tb);
  qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &executed, count);
  if (count == 0) {
    return;
  }
  /* own[i]: what instruction i adds; the block's total is their sum, a mark's remainder a suffix */
  struct decoded *own = checked(calloc(count, sizeof(struct decoded)));
  struct riscv_insn *rv = riscv ? checked(calloc(count, sizeof(struct riscv_insn))) : NULL;
  for (size_t i = 0; i < count && riscv; i++) {
    char *text = qemu_plugin_insn_disas(qemu_plugin_tb_get_insn(tb, i));
    split_riscv(text != NULL ? text : "", &rv[i]);
    free(text);
  }
  for (size_t i = 0; i < count; i++) {
    if (riscv) {
      decode_riscv(&rv[i], i + 1 < count ? &rv[i + 1] : NULL, &own[i]);
    } else {
      char *text = qemu_plugin_insn_disas(qemu_plugin_tb_get_insn(tb, i));
      decode_arm(text != NULL ? text : "", i > 0 ? own[i - 1].klass : -1, &own[i]);
      free(text);
    }
  }
  free(rv);
  uint64_t total[MAX_EVENTS] = {0};
  for (size_t i = 0; i < count; i++) {
    total[own[i].klass]++;
    for (int e = 0; e < event_count; e++) {
      total[e] += own[i].extra[e];
    }
  }
  size_t n_pairs = 0;
  for (int e = 0; e < event_count; e++) {
    n_pairs += total[e] != 0;
  }
  struct block *b = checked(calloc(1, sizeof(struct block) + n_pairs * sizeof(struct pair)));
  for (int e = 0; e < event_count; e++) {
    if (total[e] != 0) {
      b->pairs[b->n_pairs++] = (struct pair){e, total[e]};
    }
  }
  struct qemu_plugin_insn *first = qemu_plugin_tb_get_insn(tb, 0);
  struct qemu_plugin_insn *last = qemu_plugin_tb_get_insn(tb, count - 1);
  b->start = qemu_plugin_insn_vaddr(first);
  b->unaligned = qemu_plugin_insn_size(first) == 4 && (b->start & 3u) == 2;
  b->conditional = own[count - 1].conditional;
  b->transfer = own[count - 1].transfer;
  if (b->conditional) {
    b->fallthrough = qemu_plugin_insn_vaddr(last) + qemu_plugin_insn_size(last);
  }
  qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS, b); /* lives as long as QEMU */
  for (size_t i = 0; i < count; i++) {
    struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
    if (qemu_plugin_insn_vaddr(insn) == mark_address) {
      struct mark *m = checked(calloc(1, sizeof(struct mark)));
      m->insns = count - i;
      for (size_t j = i; j < count; j++) {
        m->counts[own[j].klass]++;
        for (int e = 0; e < event_count; e++) {
          m->counts[e] += own[j].extra[e];
        }
      }
      qemu_plugin_register_vcpu_insn_exec_cb(insn, on_mark, QEMU_PLUGIN_CB_NO_REGS, m);
    }
  }
  free(own);
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
                                                               int argc, char **argv) {
  if (info->version.min > 1 || info->version.cur < 1) {
    fprintf(stderr, "mlonmcu_insn: QEMU plugin API %d..%d, need 1\n", info->version.min, info->version.cur);
    return -1;
  }
  riscv = strncmp(info->target_name, "riscv", 5) == 0;
  if (riscv) {
    event_names = riscv_names;
    event_count = R_COUNT;
    cond_taken = R_COND_TAKEN;
    cond_not_taken = R_COND_NOT_TAKEN;
  } else if (strcmp(info->target_name, "arm") != 0) {
    fprintf(stderr, "mlonmcu_insn: guest %s: only arm and riscv32 are classified\n", info->target_name);
    return -1;
  }
  for (int i = 0; i < argc; i++) {
    if (strncmp(argv[i], "mark=", 5) == 0) {
      mark_address = strtoull(argv[i] + 5, NULL, 0);
    } else {
      fprintf(stderr, "mlonmcu_insn: unknown argument %s (expected mark=ADDRESS)\n", argv[i]);
      return -1;
    }
  }
  if (mark_address == 0) {
    fprintf(stderr, "mlonmcu_insn: missing argument mark=ADDRESS\n");
    return -1;
  }
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translation);
  return 0;
}
