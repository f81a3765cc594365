/*
 * malloc-trim.node: asks glibc to give the free pages inside its heaps back to the system
 * (malloc_trim(0)). glibc returns only the free top of a heap by itself; pages freed in the middle
 * of a heap stay resident until a trim.
 *   trim()      trims on the calling thread; true when any memory went back.
 *   trimAsync() trims on a thread of libuv's pool (a trim of a large, fragmented heap takes tens of
 *               milliseconds, which the event loop should not wait for); a promise of the same.
 *
 * Built by scripts/build-native.mjs with the system C compiler alone (no node-gyp, no headers to
 * download): the Node-API declarations below are the stable ABI that every Node >= 10 exports, and
 * the symbols resolve against the node binary when the addon is loaded.
 */
#include <malloc.h>
#include <stddef.h>
#include <stdlib.h>

typedef struct napi_env__ *napi_env;
typedef struct napi_value__ *napi_value;
typedef struct napi_callback_info__ *napi_callback_info;
typedef struct napi_deferred__ *napi_deferred;
typedef struct napi_async_work__ *napi_async_work;
typedef int napi_status;
typedef napi_value (*napi_callback)(napi_env env, napi_callback_info info);
typedef void (*napi_async_execute_callback)(napi_env env, void *data);
typedef void (*napi_async_complete_callback)(napi_env env, napi_status status, void *data);

extern napi_status napi_create_function(napi_env env, const char *name, size_t length, napi_callback cb,
                                        void *data, napi_value *result);
extern napi_status napi_set_named_property(napi_env env, napi_value object, const char *name,
                                           napi_value value);
extern napi_status napi_get_boolean(napi_env env, int value, napi_value *result);
extern napi_status napi_create_string_utf8(napi_env env, const char *str, size_t length, napi_value *result);
extern napi_status napi_create_promise(napi_env env, napi_deferred *deferred, napi_value *promise);
extern napi_status napi_resolve_deferred(napi_env env, napi_deferred deferred, napi_value resolution);
extern napi_status napi_create_async_work(napi_env env, napi_value async_resource, napi_value async_resource_name,
                                          napi_async_execute_callback execute,
                                          napi_async_complete_callback complete, void *data,
                                          napi_async_work *result);
extern napi_status napi_queue_async_work(napi_env env, napi_async_work work);
extern napi_status napi_delete_async_work(napi_env env, napi_async_work work);

#define NAPI_OK 0
#define NAPI_AUTO_LENGTH ((size_t)-1)

static napi_value trim(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value result = NULL;
  napi_get_boolean(env, malloc_trim(0) != 0, &result);
  return result;
}

struct trim_job {
  napi_async_work work;
  napi_deferred deferred;
  int released;
};

static void trim_execute(napi_env env, void *data) {
  (void)env;
  ((struct trim_job *)data)->released = malloc_trim(0) != 0;
}

static void trim_complete(napi_env env, napi_status status, void *data) {
  struct trim_job *job = data;
  napi_value result = NULL;
  napi_get_boolean(env, status == NAPI_OK && job->released, &result);
  napi_resolve_deferred(env, job->deferred, result);
  napi_delete_async_work(env, job->work);
  free(job);
}

static napi_value trim_async(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value promise = NULL, name = NULL;
  struct trim_job *job = calloc(1, sizeof *job);
  if (job == NULL) return NULL;
  if (napi_create_promise(env, &job->deferred, &promise) != NAPI_OK ||
      napi_create_string_utf8(env, "ptyrelay:malloc_trim", NAPI_AUTO_LENGTH, &name) != NAPI_OK ||
      napi_create_async_work(env, NULL, name, trim_execute, trim_complete, job, &job->work) != NAPI_OK) {
    free(job); /* the promise, if made, is never settled: the caller sees the returned undefined */
    return NULL;
  }
  if (napi_queue_async_work(env, job->work) != NAPI_OK) {
    napi_delete_async_work(env, job->work);
    free(job);
    return NULL;
  }
  return promise;
}

static void export_fn(napi_env env, napi_value exports, const char *name, napi_callback cb) {
  napi_value fn = NULL;
  if (napi_create_function(env, name, NAPI_AUTO_LENGTH, cb, NULL, &fn) == NAPI_OK)
    napi_set_named_property(env, exports, name, fn);
}

__attribute__((visibility("default"))) napi_value napi_register_module_v1(napi_env env, napi_value exports) {
  export_fn(env, exports, "trim", trim);
  export_fn(env, exports, "trimAsync", trim_async);
  return exports;
}

__attribute__((visibility("default"))) int node_api_module_get_api_version_v1(void) { return 1; }
