/* {"op":"load"}: dlopen a plugin (the candidate's constructors run here),
 * or have the process's own loader make it (the Python worker), and check
 * its ABI; host code gets an address-space limit on its first load. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <json-c/json.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../libkernlab/core/sandbox.h"
#include "worker_internal.h"

#define MAX_PLUGINS 64

static const kl_plugin *plugins[MAX_PLUGINS];
static int nplugins;
static int load_requests; /* loads asked for, refused ones too */

int klw_loads_asked(void) {
  return load_requests;
}

const kl_plugin *klw_plugin_at(int64_t id) {
  return id >= 0 && id < nplugins ? plugins[id] : NULL;
}

/* Host code gets an address-space limit (half the machine's memory, at
 * least 4 GiB) once the first host plugin is loaded; device workers do not:
 * the CUDA driver reserves address space far beyond any memory. Not under
 * AddressSanitizer, whose shadow memory is a reservation of the same kind. */
static void limit_address_space(void) {
#if defined(__SANITIZE_ADDRESS__)
  return;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return;
#endif
#endif
  static int done;
  if (done++) return;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return;
  rlim_t half = (rlim_t)pages * (rlim_t)page / 2, floor = (rlim_t)4 << 30;
  rlim_t as = half > floor ? half : floor;
  kl__sandbox_limit(RLIMIT_AS, as, as);
}

static kl_plugin_loader loader; /* NULL: dlopen */

void klw_set_loader(kl_plugin_loader load) {
  loader = load;
}

/* The plugin at path, through dlopen (the candidate's constructors run
 * here). NULL with why in err. */
static const kl_plugin *open_plugin(const char *path, char *err,
                                    size_t errlen) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(err, errlen, "%s", dlerror());
    return NULL;
  }
  kl_plugin_entry_fn entry = (kl_plugin_entry_fn)dlsym(h, KL_PLUGIN_SYMBOL);
  const kl_plugin *pl = entry ? entry() : NULL;
  if (!pl) snprintf(err, errlen, "%s exports no %s", path, KL_PLUGIN_SYMBOL);
  return pl;
}

void klw_op_notes(json_object *req) {
  json_object *p;
  const kl_plugin *pl = json_object_object_get_ex(req, "plugin", &p)
                            ? klw_plugin_at(json_object_get_int64(p))
                            : NULL;
  if (!pl) {
    klw_reply_error("notes: no such plugin");
    return;
  }
  const char *text =
      pl->struct_size >= offsetof(kl_plugin, notes) + sizeof(pl->notes) &&
              pl->notes
          ? pl->notes()
          : NULL;
  json_object *notes = text ? json_tokener_parse(text) : NULL;
  if (text && !json_object_is_type(notes, json_type_object)) {
    json_object_put(notes);
    klw_reply_error("notes: the plugin's notes are not a JSON object");
    return;
  }
  json_object *o = json_object_new_object();
  json_object_object_add(o, "ok", json_object_new_boolean(1));
  json_object_object_add(o, "notes", notes);
  klw_reply(o);
}

void klw_op_load(json_object *req) {
  json_object *p;
  if (!json_object_object_get_ex(req, "path", &p)) {
    klw_reply_error("load: no path");
    return;
  }
  const char *path = json_object_get_string(p);
  load_requests++; /* a refused load may have run the code's constructors */
  if (nplugins == MAX_PLUGINS) {
    klw_reply_error("load: too many plugins (%d)", MAX_PLUGINS);
    return;
  }
  char err[512] = "";
  const kl_plugin *pl = loader ? loader(path, err, sizeof err)
                               : open_plugin(path, err, sizeof err);
  if (!pl) {
    klw_reply_error("load: %s", err[0] ? err : "no plugin");
    return;
  }
  if (pl->abi_version != KL_PLUGIN_ABI_VERSION ||
      pl->struct_size < offsetof(kl_plugin, kernel_info)) {
    klw_reply_error(
        "load: %s has plugin ABI %u (size %u); this worker speaks %d", path,
        pl->abi_version, pl->struct_size, KL_PLUGIN_ABI_VERSION);
    return;
  }
  if (strcmp(pl->backend, "host") == 0) limit_address_space();
  plugins[nplugins] = pl;
  json_object *o = json_object_new_object();
  json_object_object_add(o, "ok", json_object_new_boolean(1));
  json_object_object_add(o, "id", json_object_new_int(nplugins));
  json_object_object_add(o, "case", json_object_new_string(pl->case_name));
  json_object_object_add(o, "nshapes", json_object_new_int(pl->nshapes));
  json_object_object_add(o, "nparams", json_object_new_int(pl->nparams));
  nplugins++;
  klw_reply(o);
}
