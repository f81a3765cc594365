/*
 * sched-slice.node: asks the kernel for a longer time slice for one of this process's threads
 * (sched_setattr with SCHED_OTHER and a custom slice in sched_runtime; Linux 6.12 and later).
 *   setSlice(tid, ns)  returns 0, or the errno of the refusal.
 * The thread keeps its policy class (SCHED_OTHER or SCHED_BATCH) and its nice value; only its slice
 * changes. Kernels before 6.12 accept the call and ignore the slice.
 *
 * Why a longer slice: the kernel lets a thread that wakes preempt the running one early only when
 * the waker asks for a shorter slice than the running one (EEVDF's PREEMPT_SHORT), and slices, unlike
 * nice values, count across the per-session scheduling groups of CONFIG_SCHED_AUTOGROUP. See
 * provider/background-threads.ts.
 *
 * Built by scripts/build-native.mjs with the system C compiler alone, like malloc-trim.c: the
 * Node-API declarations below are the stable ABI every Node >= 10 exports.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct napi_env__ *napi_env;
typedef struct napi_value__ *napi_value;
typedef struct napi_callback_info__ *napi_callback_info;
typedef int napi_status;
typedef napi_value (*napi_callback)(napi_env env, napi_callback_info info);

extern napi_status napi_create_function(napi_env env, const char *name, size_t length, napi_callback cb,
                                        void *data, napi_value *result);
extern napi_status napi_set_named_property(napi_env env, napi_value object, const char *name,
                                           napi_value value);
extern napi_status napi_get_cb_info(napi_env env, napi_callback_info cbinfo, size_t *argc, napi_value *argv,
                                    napi_value *this_arg, void **data);
extern napi_status napi_get_value_int64(napi_env env, napi_value value, int64_t *result);
extern napi_status napi_create_int32(napi_env env, int32_t value, napi_value *result);

#define NAPI_OK 0
#define NAPI_AUTO_LENGTH ((size_t)-1)

/* The first version of the kernel's struct (SCHED_ATTR_SIZE_VER0, 48 bytes). */
struct slice_attr {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime;
  uint64_t sched_deadline;
  uint64_t sched_period;
};

#ifndef SCHED_BATCH
#define SCHED_BATCH 3
#endif

static int set_slice(pid_t tid, uint64_t ns) {
#ifdef SYS_sched_setattr
  int policy = sched_getscheduler(tid);
  if (policy < 0) return errno;
  if (policy != SCHED_OTHER && policy != SCHED_BATCH) return EPERM; /* not a fair-class thread */
  errno = 0;
  int nice = getpriority(PRIO_PROCESS, (id_t)tid);
  if (nice == -1 && errno != 0) return errno;
  struct slice_attr attr = {0};
  attr.size = sizeof attr;
  attr.sched_policy = (uint32_t)policy;
  attr.sched_nice = nice;
  attr.sched_runtime = ns;
  return syscall(SYS_sched_setattr, tid, &attr, 0) == 0 ? 0 : errno;
#else
  (void)tid;
  (void)ns;
  return ENOSYS;
#endif
}

static napi_value set_slice_js(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  int64_t tid = 0, ns = 0;
  int rc = EINVAL;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) == NAPI_OK && argc == 2 &&
      napi_get_value_int64(env, argv[0], &tid) == NAPI_OK && napi_get_value_int64(env, argv[1], &ns) == NAPI_OK &&
      tid > 0 && ns > 0)
    rc = set_slice((pid_t)tid, (uint64_t)ns);
  napi_value result = NULL;
  napi_create_int32(env, rc, &result);
  return result;
}

__attribute__((visibility("default"))) napi_value napi_register_module_v1(napi_env env, napi_value exports) {
  napi_value fn = NULL;
  if (napi_create_function(env, "setSlice", NAPI_AUTO_LENGTH, set_slice_js, NULL, &fn) == NAPI_OK)
    napi_set_named_property(env, exports, "setSlice", fn);
  return exports;
}

__attribute__((visibility("default"))) int node_api_module_get_api_version_v1(void) { return 1; }
