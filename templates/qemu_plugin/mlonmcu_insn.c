/*
 * mlonmcu instruction counter for QEMU's TCG plugin interface (API version 1, as loaded by
 * QEMU 7.2). Debian ships no plugin headers, so the few declarations needed are made here.
 *
 * Counts executed guest instructions (one inline add per translation block) and, whenever the
 * instruction at `mark=ADDRESS` (the firmware's mlonmcu_mark) starts, prints
 *     MLONMCU MARK <index> <instructions executed before it>
 * to QEMU's log. Differences between marks are exact instruction counts.
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

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

static uint64_t executed; /* instructions of every translation block entered so far */
static uint64_t mark_address;
static uint64_t marks;

static void on_mark(unsigned int vcpu_index, void *userdata) {
  (void)vcpu_index;
  /* The block's inline add already counted its instructions from the mark onwards. */
  uint64_t not_yet_executed = (uint64_t)(uintptr_t)userdata;
  char text[96];
  snprintf(text, sizeof(text), "MLONMCU MARK %" PRIu64 " %" PRIu64 "\n", marks++, executed - not_yet_executed);
  qemu_plugin_outs(text);
}

static void on_translation(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  (void)id;
  size_t count = qemu_plugin_tb_n_insns(tb);
  qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &executed, count);
  for (size_t i = 0; i < count; i++) {
    struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
    if (qemu_plugin_insn_vaddr(insn) == mark_address) {
      qemu_plugin_register_vcpu_insn_exec_cb(insn, on_mark, QEMU_PLUGIN_CB_NO_REGS,
                                             (void *)(uintptr_t)(count - i));
    }
  }
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
    }
  }
  if (mark_address == 0) {
    fprintf(stderr, "mlonmcu_insn: missing argument mark=ADDRESS\n");
    return -1;
  }
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translation);
  return 0;
}
