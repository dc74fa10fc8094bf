/*
 * A fake libnvidia-ml.so.1 for tests: the real pynvml loads it and gets the real error codes.
 *
 * The node it describes is read at nvmlInit from the file named by $CTK_FAKE_NVML_TOPOLOGY, so one
 * loaded library serves every fixture node of a test session. Line format (see topology.py):
 *   error <driver-not-loaded|version-mismatch|no-permission|unknown>   nvmlInit fails with it
 *   driver <version>            cuda <int, e.g. 12040>
 *   gpu <minor> <none|off|on> <uuid> <pci-bus-id> <name...>         (mig support and mode)
 *   mig <slot> <gi> <ci> <gi-slices> <ci-slices> <memory-mb> <uuid> <name...>  (of the last gpu)
 *   lost <index>                GPU <index> fell off the bus: its handle is GPU_IS_LOST
 * Optional lines about the last gpu (defaults keep older topology files working):
 *   pending <0|1>               pending MIG mode (default: the current mode)
 *   brand <nvmlBrandType_t>     e.g. 2 tesla, 5 geforce, 14 nvidia (default 14)
 *   memory <total> <used>       bytes (default 85520809984, used = the processes' sum)
 *   process <pid> <used|na>     a compute process and its memory in bytes (na: not available)
 *   migprocess <pid> <used|na>  the same on the last mig device
 *   unprivileged                answer as to a non-root caller even when run as root
 * Health lines about the last gpu (defaults: a healthy GPU in persistence mode):
 *   ecc <count>                 volatile uncorrected ECC errors (default 0)
 *   retired-pending <0|1>       pages waiting for retirement (pre-A100)
 *   remap <pending> <failure>   row remapping pending / failed (A100 and later)
 *   throttle <mask>             current clocks event reasons, hex (default 0x1: idle)
 *   persistence <0|1>           persistence mode (default 1)
 *   nohealth                    the health calls answer NOT_SUPPORTED (a GeForce, say)
 *
 * Build: gcc -shared -fPIC -Wl,-soname,libnvidia-ml.so.1 -o libnvidia-ml.so.1 fake_nvml.c
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int nvmlReturn_t;
enum {
    OK = 0, UNINITIALIZED = 1, INVALID_ARGUMENT = 2, NOT_SUPPORTED = 3, NO_PERMISSION = 4,
    NOT_FOUND = 6, INSUFFICIENT_SIZE = 7, DRIVER_NOT_LOADED = 9, GPU_IS_LOST = 15,
    LIB_RM_VERSION_MISMATCH = 18,
    UNKNOWN = 999
};

#define MAX_GPUS 256
#define MAX_MIGS 7
#define MAX_PROCS 16
#define TEXT 96
#define VALUE_NOT_AVAILABLE 0xFFFFFFFFFFFFFFFFULL /* NVML_VALUE_NOT_AVAILABLE as unsigned long long */
#define DEFAULT_MEMORY 85520809984ULL
#define BRAND_NVIDIA 14

struct process {
    unsigned pid;
    unsigned long long used;
};

struct device {
    int is_mig, index, minor, mig_mode, lost; /* mig_mode: -1 none, 0 off, 1 on */
    int pending, brand, memory_set, proc_count;
    int retired_pending, remap_pending, remap_failure, persistence, no_health;
    unsigned long long ecc_uncorrected, throttle;
    unsigned gi, ci, gi_slices, ci_slices;
    unsigned long long memory_mb, memory_total, memory_used;
    struct process procs[MAX_PROCS];
    char uuid[TEXT], bus_id[TEXT], name[TEXT];
    struct device *parent;
    struct device *migs[MAX_MIGS];
};

typedef struct {
    char busIdLegacy[16];
    unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
    unsigned pid;
    unsigned long long usedGpuMemory;
    unsigned gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

typedef struct {
    unsigned multiprocessorCount, sharedCopyEngineCount, sharedDecoderCount, sharedEncoderCount,
        sharedJpegCount, sharedOfaCount, gpuInstanceSliceCount, computeInstanceSliceCount;
    unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;

static struct device gpus[MAX_GPUS];
static struct device migs[MAX_GPUS * MAX_MIGS];
static int gpu_count, mig_count, init_count, unprivileged;
static char driver_version[TEXT];
static int cuda_version;

static void rest_of_line(const char *line, int skip, char *out) {
    /* copy everything after the first `skip` space-separated words */
    const char *p = line;
    for (int i = 0; i < skip && p; i++) {
        p = strchr(p, ' ');
        if (p) p++;
    }
    snprintf(out, TEXT, "%s", p ? p : "");
    out[strcspn(out, "\n")] = 0;
}

static nvmlReturn_t load(void) {
    const char *file = getenv("CTK_FAKE_NVML_TOPOLOGY");
    FILE *f = file ? fopen(file, "r") : NULL;
    char line[512], word[TEXT], mode[TEXT];
    struct device *gpu = NULL;
    nvmlReturn_t status = OK;
    gpu_count = mig_count = unprivileged = 0;
    if (!f) return DRIVER_NOT_LOADED;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "%95s", word) != 1 || word[0] == '#') continue;
        if (!strcmp(word, "error")) {
            sscanf(line, "error %95s", word);
            status = !strcmp(word, "driver-not-loaded") ? DRIVER_NOT_LOADED
                   : !strcmp(word, "version-mismatch") ? LIB_RM_VERSION_MISMATCH
                   : !strcmp(word, "no-permission")    ? NO_PERMISSION
                                                        : UNKNOWN;
        } else if (!strcmp(word, "driver")) {
            sscanf(line, "driver %95s", driver_version);
        } else if (!strcmp(word, "cuda")) {
            sscanf(line, "cuda %d", &cuda_version);
        } else if (!strcmp(word, "gpu") && gpu_count < MAX_GPUS) {
            gpu = &gpus[gpu_count];
            memset(gpu, 0, sizeof *gpu);
            gpu->index = gpu_count++;
            sscanf(line, "gpu %d %95s %95s %95s", &gpu->minor, mode, gpu->uuid, gpu->bus_id);
            gpu->mig_mode = !strcmp(mode, "on") ? 1 : !strcmp(mode, "off") ? 0 : -1;
            gpu->pending = gpu->mig_mode;
            gpu->brand = BRAND_NVIDIA;
            gpu->memory_total = DEFAULT_MEMORY;
            gpu->persistence = 1;
            gpu->throttle = 0x1ULL;
            rest_of_line(line, 5, gpu->name);
        } else if (!strcmp(word, "pending") && gpu) {
            sscanf(line, "pending %d", &gpu->pending);
        } else if (!strcmp(word, "brand") && gpu) {
            sscanf(line, "brand %d", &gpu->brand);
        } else if (!strcmp(word, "memory") && gpu) {
            if (sscanf(line, "memory %llu %llu", &gpu->memory_total, &gpu->memory_used) == 2)
                gpu->memory_set = 1;
        } else if (!strcmp(word, "ecc") && gpu) {
            sscanf(line, "ecc %llu", &gpu->ecc_uncorrected);
        } else if (!strcmp(word, "retired-pending") && gpu) {
            sscanf(line, "retired-pending %d", &gpu->retired_pending);
        } else if (!strcmp(word, "remap") && gpu) {
            sscanf(line, "remap %d %d", &gpu->remap_pending, &gpu->remap_failure);
        } else if (!strcmp(word, "throttle") && gpu) {
            sscanf(line, "throttle %llx", &gpu->throttle);
        } else if (!strcmp(word, "persistence") && gpu) {
            sscanf(line, "persistence %d", &gpu->persistence);
        } else if (!strcmp(word, "nohealth") && gpu) {
            gpu->no_health = 1;
        } else if (!strcmp(word, "unprivileged")) {
            unprivileged = 1;
        } else if ((!strcmp(word, "process") && gpu && gpu->proc_count < MAX_PROCS) ||
                   (!strcmp(word, "migprocess") && mig_count && migs[mig_count - 1].proc_count < MAX_PROCS)) {
            struct device *owner = word[0] == 'm' ? &migs[mig_count - 1] : gpu;
            struct process *proc = &owner->procs[owner->proc_count++];
            char used[TEXT] = "na";
            sscanf(line, "%*s %u %95s", &proc->pid, used);
            proc->used = strcmp(used, "na") ? strtoull(used, NULL, 10) : VALUE_NOT_AVAILABLE;
        } else if (!strcmp(word, "lost")) {
            int lost = -1;
            sscanf(line, "lost %d", &lost);
            if (lost >= 0 && lost < gpu_count) gpus[lost].lost = 1;
        } else if (!strcmp(word, "mig") && gpu) {
            struct device *m = &migs[mig_count++];
            int slot = 0;
            memset(m, 0, sizeof *m);
            sscanf(line, "mig %d %u %u %u %u %llu %95s", &slot, &m->gi, &m->ci, &m->gi_slices,
                   &m->ci_slices, &m->memory_mb, m->uuid);
            rest_of_line(line, 8, m->name);
            m->is_mig = 1;
            m->index = slot;
            m->parent = gpu;
            if (slot >= 0 && slot < MAX_MIGS) gpu->migs[slot] = m;
        }
    }
    fclose(f);
    return status;
}

static nvmlReturn_t copy_text(char *out, unsigned length, const char *text) {
    if (!out) return INVALID_ARGUMENT;
    if (strlen(text) + 1 > length) return INSUFFICIENT_SIZE;
    strcpy(out, text);
    return OK;
}

#define REQUIRE_INIT() do { if (init_count == 0) return UNINITIALIZED; } while (0)
#define REQUIRE(cond) do { if (!(cond)) return INVALID_ARGUMENT; } while (0)

nvmlReturn_t nvmlInitWithFlags(unsigned flags) {
    (void)flags;
    nvmlReturn_t status = load();
    if (status == OK) init_count++;
    return status;
}
nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
nvmlReturn_t nvmlInit(void) { return nvmlInitWithFlags(0); }

nvmlReturn_t nvmlShutdown(void) {
    REQUIRE_INIT();
    init_count--;
    return OK;
}

const char *nvmlErrorString(nvmlReturn_t result) {
    switch (result) {
    case OK: return "Success";
    case UNINITIALIZED: return "Uninitialized";
    case INVALID_ARGUMENT: return "Invalid Argument";
    case NOT_SUPPORTED: return "Not Supported";
    case NO_PERMISSION: return "Insufficient Permissions";
    case NOT_FOUND: return "Not Found";
    case INSUFFICIENT_SIZE: return "Insufficient Size";
    case DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case GPU_IS_LOST: return "GPU is lost";
    case LIB_RM_VERSION_MISMATCH: return "RM has detected an NVML/RM version mismatch.";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned length) {
    REQUIRE_INIT();
    return copy_text(version, length, driver_version);
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned length) {
    char text[TEXT + 8];
    REQUIRE_INIT();
    snprintf(text, sizeof text, "12.%s", driver_version);
    return copy_text(version, length, text);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *version) {
    REQUIRE(version);
    REQUIRE_INIT();
    *version = cuda_version;
    return OK;
}
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version) {
    return nvmlSystemGetCudaDriverVersion(version);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *count) {
    REQUIRE_INIT();
    REQUIRE(count);
    *count = (unsigned)gpu_count;
    return OK;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, struct device **device) {
    REQUIRE_INIT();
    REQUIRE(device && index < (unsigned)gpu_count);
    if (gpus[index].lost) return GPU_IS_LOST;
    *device = &gpus[index];
    return OK;
}

nvmlReturn_t nvmlDeviceGetIndex(struct device *device, unsigned *index) {
    REQUIRE_INIT();
    REQUIRE(device && index && !device->is_mig);
    *index = (unsigned)device->index;
    return OK;
}

nvmlReturn_t nvmlDeviceGetMinorNumber(struct device *device, unsigned *minor) {
    REQUIRE_INIT();
    REQUIRE(device && minor);
    if (device->is_mig) return NOT_SUPPORTED;
    *minor = (unsigned)device->minor;
    return OK;
}

nvmlReturn_t nvmlDeviceGetUUID(struct device *device, char *uuid, unsigned length) {
    REQUIRE_INIT();
    REQUIRE(device);
    return copy_text(uuid, length, device->uuid);
}

nvmlReturn_t nvmlDeviceGetName(struct device *device, char *name, unsigned length) {
    REQUIRE_INIT();
    REQUIRE(device);
    return copy_text(name, length, device->name);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(struct device *device, nvmlPciInfo_t *pci) {
    const char *bus_id;
    REQUIRE_INIT();
    REQUIRE(device && pci);
    bus_id = device->is_mig ? device->parent->bus_id : device->bus_id;
    memset(pci, 0, sizeof *pci);
    snprintf(pci->busId, sizeof pci->busId, "%.31s", bus_id);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%.15s", bus_id + 4);
    sscanf(bus_id, "%x:%x:%x", &pci->domain, &pci->bus, &pci->device);
    pci->pciDeviceId = 0x20b010de;
    return OK;
}

nvmlReturn_t nvmlDeviceGetMigMode(struct device *device, unsigned *current, unsigned *pending) {
    REQUIRE_INIT();
    REQUIRE(device && current && pending);
    if (device->is_mig || device->mig_mode < 0) return NOT_SUPPORTED;
    *current = (unsigned)device->mig_mode;
    *pending = (unsigned)device->pending;
    return OK;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(struct device *device, unsigned *count) {
    REQUIRE_INIT();
    REQUIRE(device && count);
    if (device->is_mig || device->mig_mode < 0) return NOT_SUPPORTED;
    *count = MAX_MIGS;
    return OK;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(struct device *device, unsigned index,
                                                 struct device **mig) {
    REQUIRE_INIT();
    REQUIRE(device && mig && !device->is_mig && index < MAX_MIGS);
    if (device->mig_mode != 1) return INVALID_ARGUMENT;
    if (!device->migs[index]) return NOT_FOUND;
    *mig = device->migs[index];
    return OK;
}

nvmlReturn_t nvmlDeviceIsMigDeviceHandle(struct device *device, unsigned *is_mig) {
    REQUIRE_INIT();
    REQUIRE(device && is_mig);
    *is_mig = (unsigned)device->is_mig;
    return OK;
}

nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(struct device *mig,
                                                          struct device **device) {
    REQUIRE_INIT();
    REQUIRE(mig && device && mig->is_mig);
    *device = mig->parent;
    return OK;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(struct device *device, unsigned *id) {
    REQUIRE_INIT();
    REQUIRE(device && id);
    if (!device->is_mig) return NOT_SUPPORTED;
    *id = device->gi;
    return OK;
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(struct device *device, unsigned *id) {
    REQUIRE_INIT();
    REQUIRE(device && id);
    if (!device->is_mig) return NOT_SUPPORTED;
    *id = device->ci;
    return OK;
}

nvmlReturn_t nvmlDeviceGetAttributes_v2(struct device *device, nvmlDeviceAttributes_t *attrs) {
    REQUIRE_INIT();
    REQUIRE(device && attrs);
    if (!device->is_mig) return NOT_SUPPORTED;
    memset(attrs, 0, sizeof *attrs);
    attrs->gpuInstanceSliceCount = device->gi_slices;
    attrs->computeInstanceSliceCount = device->ci_slices;
    attrs->multiprocessorCount = 14 * device->ci_slices;
    attrs->memorySizeMB = device->memory_mb;
    return OK;
}

nvmlReturn_t nvmlDeviceGetBrand(struct device *device, int *brand) {
    REQUIRE_INIT();
    REQUIRE(device && brand);
    *brand = device->is_mig ? device->parent->brand : device->brand;
    return OK;
}

/* --- health (ECC, memory repair, clocks, persistence): full GPUs only --------------------- */

#define HEALTH(device) \
    REQUIRE_INIT(); \
    if (!(device) || (device)->is_mig) return INVALID_ARGUMENT; \
    if ((device)->no_health) return NOT_SUPPORTED

nvmlReturn_t nvmlDeviceGetTotalEccErrors(struct device *device, int error_type, int counter_type,
                                         unsigned long long *count) {
    HEALTH(device);
    REQUIRE(count);
    /* NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1, NVML_VOLATILE_ECC = 0 */
    *count = error_type == 1 && counter_type == 0 ? device->ecc_uncorrected : 0;
    return OK;
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(struct device *device, int *pending) {
    HEALTH(device);
    REQUIRE(pending);
    *pending = device->retired_pending;
    return OK;
}

nvmlReturn_t nvmlDeviceGetRemappedRows(struct device *device, unsigned *corrected,
                                       unsigned *uncorrected, unsigned *pending, unsigned *failure) {
    HEALTH(device);
    REQUIRE(corrected && uncorrected && pending && failure);
    *corrected = 0;
    *uncorrected = device->remap_pending || device->remap_failure ? 1 : 0;
    *pending = (unsigned)device->remap_pending;
    *failure = (unsigned)device->remap_failure;
    return OK;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(struct device *device,
                                                    unsigned long long *reasons) {
    HEALTH(device);
    REQUIRE(reasons);
    *reasons = device->throttle;
    return OK;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(struct device *device,
                                                       unsigned long long *reasons) {
    return nvmlDeviceGetCurrentClocksEventReasons(device, reasons);
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(struct device *device, int *mode) {
    HEALTH(device);
    REQUIRE(mode);
    *mode = device->persistence;
    return OK;
}

static unsigned long long process_memory(const struct device *device) {
    unsigned long long sum = 0;
    for (int i = 0; i < device->proc_count; i++)
        if (device->procs[i].used != VALUE_NOT_AVAILABLE) sum += device->procs[i].used;
    return sum;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(struct device *device, nvmlMemory_t *memory) {
    REQUIRE_INIT();
    REQUIRE(device && memory);
    if (device->is_mig) {
        memory->total = device->memory_mb << 20;
        memory->used = 0;
    } else {
        memory->total = device->memory_total;
        memory->used = device->memory_set ? device->memory_used : process_memory(device);
    }
    memory->free = memory->total > memory->used ? memory->total - memory->used : 0;
    return OK;
}

/* Compute processes: count query first (infos may be NULL), INSUFFICIENT_SIZE when too small.
 * A MIG device lists its own; with MIG on, the whole GPU's aggregate list (its own and every MIG
 * device's) needs privileges (NO_PERMISSION otherwise). */
static unsigned collect(struct device *device, nvmlProcessInfo_t *infos, unsigned room) {
    unsigned n = 0;
    for (int i = 0; i < device->proc_count; i++, n++) {
        if (!infos || n >= room) continue;
        infos[n].pid = device->procs[i].pid;
        infos[n].usedGpuMemory = device->procs[i].used;
        infos[n].gpuInstanceId = device->is_mig ? device->gi : 0xFFFFFFFFu;
        infos[n].computeInstanceId = device->is_mig ? device->ci : 0xFFFFFFFFu;
    }
    if (!device->is_mig)
        for (int slot = 0; slot < MAX_MIGS; slot++)
            if (device->migs[slot])
                n += collect(device->migs[slot], infos ? infos + n : NULL, room > n ? room - n : 0);
    return n;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(struct device *device, unsigned *count,
                                                     nvmlProcessInfo_t *infos) {
    unsigned n;
    REQUIRE_INIT();
    REQUIRE(device && count);
    if (!device->is_mig && device->mig_mode == 1 && (unprivileged || geteuid() != 0))
        return NO_PERMISSION;
    n = collect(device, NULL, 0);
    if (*count < n) {
        *count = n;
        return INSUFFICIENT_SIZE;
    }
    *count = n;
    if (n == 0) return OK;
    REQUIRE(infos);
    collect(device, infos, n);
    return OK;
}
