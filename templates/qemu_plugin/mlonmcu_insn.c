/*
 * mlonmcu instruction counter for QEMU's TCG plugin interface (API version 1, as loaded by
 * QEMU 7.2). Debian ships no plugin headers, so the few declarations needed are made here.
 *
 * Counts executed guest instructions (one inline add per translation block) and, whenever the
 * instruction at `mark=ADDRESS` (the firmware's mlonmcu_mark) starts, prints
 *     MLONMCU MARK <index> <instructions executed before it>
 * to QEMU's log. Differences between marks are exact instruction counts.
 *
 * With `timing=FILE` it also estimates cycles: each instruction is put in a class by its
 * mnemonic (QEMU's disassembler) and weighted with the class's cycles from FILE (lines
 * `<class> <cycles>`, written by mlonmcu/targets/timing.py from the core's published timings;
 * `refill` is a taken branch's pipeline refill, `pipelined` a single load/store right after
 * another). A conditional branch is taken when the next block does not start where it falls
 * through. The mark line then ends with the estimated cycles before the mark.
 *
 * Usage: qemu-system-arm ... -plugin libmlonmcu_insn.so,mark=0x1234[,timing=FILE] -d plugin -D log.txt
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

/* -- estimated cycles (timing=FILE) ------------------------------------------------------------- */

enum klass {
  K_ALU, K_MUL, K_MAC, K_LONG_MUL, K_LONG_MAC, K_DSP_MUL, K_DIV, K_LOAD, K_STORE, K_LOAD_DOUBLE,
  K_STORE_DOUBLE, K_MULTIPLE, K_BRANCH, K_CALL, K_TABLE_BRANCH, K_FP, K_FP_MAC, K_FP_DIV, K_FP_MEMORY,
  K_FP_MULTIPLE, K_REFILL, K_PIPELINED, K_COUNT
};
static const char *const class_names[K_COUNT] = {
    "alu", "mul", "mac", "long_mul", "long_mac", "dsp_mul", "div", "load", "store", "load_double",
    "store_double", "multiple", "branch", "call", "table_branch", "fp", "fp_mac", "fp_div", "fp_memory",
    "fp_multiple", "refill", "pipelined"};

struct mnemonic {
  const char *name;
  enum klass klass;
};
/* Mnemonics without width (.w/.n) or data type (.f32) suffix; anything not listed is `alu`. */
static const struct mnemonic mnemonics[] = {
    {"mul", K_MUL}, {"muls", K_MUL}, {"mla", K_MAC}, {"mls", K_MAC},
    {"smull", K_LONG_MUL}, {"umull", K_LONG_MUL}, {"smlal", K_LONG_MAC}, {"umlal", K_LONG_MAC},
    {"umaal", K_LONG_MAC}, {"smlald", K_LONG_MAC}, {"smlaldx", K_LONG_MAC}, {"smlsld", K_LONG_MAC},
    {"smlsldx", K_LONG_MAC}, {"smlalbb", K_LONG_MAC}, {"smlalbt", K_LONG_MAC}, {"smlaltb", K_LONG_MAC},
    {"smlaltt", K_LONG_MAC}, {"smlad", K_DSP_MUL}, {"smladx", K_DSP_MUL}, {"smlsd", K_DSP_MUL},
    {"smlsdx", K_DSP_MUL}, {"smuad", K_DSP_MUL}, {"smuadx", K_DSP_MUL}, {"smusd", K_DSP_MUL},
    {"smusdx", K_DSP_MUL}, {"smlabb", K_DSP_MUL}, {"smlabt", K_DSP_MUL}, {"smlatb", K_DSP_MUL},
    {"smlatt", K_DSP_MUL}, {"smlawb", K_DSP_MUL}, {"smlawt", K_DSP_MUL}, {"smulbb", K_DSP_MUL},
    {"smulbt", K_DSP_MUL}, {"smultb", K_DSP_MUL}, {"smultt", K_DSP_MUL}, {"smulwb", K_DSP_MUL},
    {"smulwt", K_DSP_MUL}, {"smmul", K_DSP_MUL}, {"smmulr", K_DSP_MUL}, {"smmla", K_DSP_MUL},
    {"smmlar", K_DSP_MUL}, {"smmls", K_DSP_MUL}, {"smmlsr", K_DSP_MUL}, {"sdiv", K_DIV}, {"udiv", K_DIV},
    {"ldr", K_LOAD}, {"ldrb", K_LOAD}, {"ldrh", K_LOAD}, {"ldrsb", K_LOAD}, {"ldrsh", K_LOAD},
    {"ldrex", K_LOAD}, {"ldrexb", K_LOAD}, {"ldrexh", K_LOAD}, {"ldrt", K_LOAD}, {"ldrbt", K_LOAD},
    {"ldrht", K_LOAD}, {"ldrsbt", K_LOAD}, {"ldrsht", K_LOAD}, {"str", K_STORE}, {"strb", K_STORE},
    {"strh", K_STORE}, {"strex", K_STORE}, {"strexb", K_STORE}, {"strexh", K_STORE}, {"strt", K_STORE},
    {"strbt", K_STORE}, {"strht", K_STORE}, {"ldrd", K_LOAD_DOUBLE}, {"strd", K_STORE_DOUBLE},
    {"ldm", K_MULTIPLE}, {"ldmia", K_MULTIPLE}, {"ldmfd", K_MULTIPLE}, {"ldmdb", K_MULTIPLE},
    {"ldmea", K_MULTIPLE}, {"stm", K_MULTIPLE}, {"stmia", K_MULTIPLE}, {"stmea", K_MULTIPLE},
    {"stmdb", K_MULTIPLE}, {"stmfd", K_MULTIPLE}, {"push", K_MULTIPLE}, {"pop", K_MULTIPLE},
    {"b", K_BRANCH}, {"cbz", K_BRANCH}, {"cbnz", K_BRANCH}, {"bl", K_CALL}, {"blx", K_CALL}, {"bx", K_CALL},
    {"tbb", K_TABLE_BRANCH}, {"tbh", K_TABLE_BRANCH},
    {"vmla", K_FP_MAC}, {"vmls", K_FP_MAC}, {"vnmla", K_FP_MAC}, {"vnmls", K_FP_MAC}, {"vfma", K_FP_MAC},
    {"vfms", K_FP_MAC}, {"vfnma", K_FP_MAC}, {"vfnms", K_FP_MAC}, {"vdiv", K_FP_DIV}, {"vsqrt", K_FP_DIV},
    {"vldr", K_FP_MEMORY}, {"vstr", K_FP_MEMORY}, {"vldm", K_FP_MULTIPLE}, {"vldmia", K_FP_MULTIPLE},
    {"vldmdb", K_FP_MULTIPLE}, {"vstm", K_FP_MULTIPLE}, {"vstmia", K_FP_MULTIPLE},
    {"vstmdb", K_FP_MULTIPLE}, {"vpush", K_FP_MULTIPLE}, {"vpop", K_FP_MULTIPLE},
};
static const char *const conditions[] = {"eq", "ne", "cs", "hs", "cc", "lo", "mi", "pl", "vs",
                                         "vc", "hi", "ls", "ge", "lt", "gt", "le", "al"};

static bool timing;
static uint64_t weight[K_COUNT];
static uint64_t cycles;              /* estimated cycles of every block entered so far */
static uint64_t pending_fallthrough; /* the block just entered ends in a conditional branch to ... */

struct block {
  uint64_t start, fallthrough; /* fallthrough: 0 unless the block ends in a conditional branch */
  uint64_t cost;               /* with its conditional branch not taken */
};
struct mark {
  uint64_t insns, cost; /* of the mark's block from the mark onwards: counted on entry, not yet run */
};

static int lookup(const char *name) {
  for (size_t i = 0; i < sizeof(mnemonics) / sizeof(mnemonics[0]); i++) {
    if (strcmp(mnemonics[i].name, name) == 0) {
      return (int)mnemonics[i].klass;
    }
  }
  return -1;
}

/* The class of a mnemonic; *conditional: a branch that may fall through (b<cc>, cbz, cbnz). */
static enum klass classify(const char *text, bool *conditional) {
  char name[16] = {0};
  size_t n = 0;
  while (text[n] != '\0' && text[n] != ' ' && text[n] != '.' && n + 1 < sizeof(name)) {
    name[n] = text[n];
    n++;
  }
  *conditional = strcmp(name, "cbz") == 0 || strcmp(name, "cbnz") == 0;
  int found = lookup(name);
  if (found >= 0) {
    return (enum klass)found;
  }
  if (n > 2) { /* b<cc>: the only conditional forms outside IT blocks */
    for (size_t i = 0; i < sizeof(conditions) / sizeof(conditions[0]); i++) {
      if (strcmp(name + n - 2, conditions[i]) == 0) {
        char stem[16] = {0};
        memcpy(stem, name, n - 2);
        found = lookup(stem);
        if (found == K_BRANCH) {
          *conditional = strcmp(conditions[i], "al") != 0;
          return K_BRANCH;
        }
      }
    }
  }
  return K_ALU;
}

/* Registers in a {list}: `{r4, r5, lr}` is 3; a double register counts as 2 words. */
static uint64_t registers(const char *text) {
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

static uint64_t cost_of(enum klass k, const char *text, bool after_single_transfer) {
  switch (k) {
    case K_LOAD:
    case K_STORE:
      return after_single_transfer ? weight[K_PIPELINED] : weight[k];
    case K_MULTIPLE: {
      uint64_t cost = weight[k] + registers(text);
      bool pops_pc = strstr(text, "pc}") != NULL && (strncmp(text, "pop", 3) == 0 || strncmp(text, "ldm", 3) == 0);
      return pops_pc ? cost + weight[K_REFILL] : cost;
    }
    case K_FP_MULTIPLE:
      return weight[k] + registers(text);
    case K_CALL:
    case K_TABLE_BRANCH:
      return weight[k] + weight[K_REFILL];
    default:
      return weight[k];
  }
}

static void on_block(unsigned int vcpu_index, void *userdata) {
  (void)vcpu_index;
  const struct block *b = userdata;
  if (pending_fallthrough != 0 && b->start != pending_fallthrough) {
    cycles += weight[K_REFILL]; /* the previous block's conditional branch was taken */
  }
  pending_fallthrough = b->fallthrough;
  cycles += b->cost;
}

static bool read_timing(const char *path) {
  FILE *file = fopen(path, "r");
  if (file == NULL) {
    fprintf(stderr, "mlonmcu_insn: cannot read timing file %s\n", path);
    return false;
  }
  bool seen[K_COUNT] = {false};
  char name[32];
  unsigned long long value;
  while (fscanf(file, "%31s %llu", name, &value) == 2) {
    for (int k = 0; k < K_COUNT; k++) {
      if (strcmp(name, class_names[k]) == 0) {
        weight[k] = value;
        seen[k] = true;
      }
    }
  }
  fclose(file);
  for (int k = 0; k < K_COUNT; k++) {
    if (!seen[k]) {
      fprintf(stderr, "mlonmcu_insn: timing file %s has no cycles for class '%s'\n", path, class_names[k]);
      return false;
    }
  }
  return true;
}

/* -- marks and translation ------------------------------------------------------------------------ */

static void on_mark(unsigned int vcpu_index, void *userdata) {
  (void)vcpu_index;
  /* The block's counters already include it from the mark onwards. */
  const struct mark *m = userdata;
  char text[128];
  if (timing) {
    snprintf(text, sizeof(text), "MLONMCU MARK %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", marks++,
             executed - m->insns, cycles - m->cost);
  } else {
    snprintf(text, sizeof(text), "MLONMCU MARK %" PRIu64 " %" PRIu64 "\n", marks++, executed - m->insns);
  }
  qemu_plugin_outs(text);
}

static void on_translation(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  (void)id;
  size_t count = qemu_plugin_tb_n_insns(tb);
  qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &executed, count);
  uint64_t *costs = calloc(count + 1, sizeof(uint64_t)); /* costs[i]: of instructions i.. to the end */
  struct block *b = calloc(1, sizeof(struct block));
  if (costs == NULL || b == NULL) {
    fprintf(stderr, "mlonmcu_insn: out of memory\n");
    abort();
  }
  if (timing && count > 0) {
    uint64_t *own = calloc(count, sizeof(uint64_t));
    if (own == NULL) {
      abort();
    }
    bool after_single_transfer = false;
    for (size_t i = 0; i < count; i++) {
      struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
      char *text = qemu_plugin_insn_disas(insn);
      bool conditional = false;
      enum klass k = classify(text != NULL ? text : "", &conditional);
      own[i] = cost_of(k, text != NULL ? text : "", after_single_transfer);
      after_single_transfer = k == K_LOAD || k == K_STORE;
      if (k == K_BRANCH && !conditional) {
        own[i] += weight[K_REFILL]; /* b: always taken */
      }
      if (k == K_BRANCH && conditional && i + 1 == count) {
        b->fallthrough = qemu_plugin_insn_vaddr(insn) + qemu_plugin_insn_size(insn);
      }
      free(text);
    }
    for (size_t i = count; i-- > 0;) {
      costs[i] = costs[i + 1] + own[i];
    }
    free(own);
    b->start = qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, 0));
    b->cost = costs[0];
    qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS, b);
  } else {
    free(b);
  }
  for (size_t i = 0; i < count; i++) {
    struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
    if (qemu_plugin_insn_vaddr(insn) == mark_address) {
      struct mark *m = malloc(sizeof(struct mark)); /* lives as long as the translation */
      if (m == NULL) {
        abort();
      }
      m->insns = count - i;
      m->cost = costs[i];
      qemu_plugin_register_vcpu_insn_exec_cb(insn, on_mark, QEMU_PLUGIN_CB_NO_REGS, m);
    }
  }
  free(costs);
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
                                                               int argc, char **argv) {
  if (info->version.min > 1 || info->version.cur < 1) {
    fprintf(stderr, "mlonmcu_insn: QEMU plugin API %d..%d, need 1\n", info->version.min, info->version.cur);
    return -1;
  }
  for (int i = 0; i < argc; i++) {
    if (strncmp(argv[i], "mark=", 5) == 0) {
      mark_address = strtoull(argv[i] + 5, NULL, 0);
    } else if (strncmp(argv[i], "timing=", 7) == 0) {
      if (!read_timing(argv[i] + 7)) {
        return -1;
      }
      timing = true;
    }
  }
  if (mark_address == 0) {
    fprintf(stderr, "mlonmcu_insn: missing argument mark=ADDRESS\n");
    return -1;
  }
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translation);
  return 0;
}
