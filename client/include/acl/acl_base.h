/*
 * acld client library — AscendCL base definitions (C API).
 * Names, types and values follow the CANN AscendCL headers; see SPEC.md section 3.
 */
#ifndef ACLD_INC_ACL_ACL_BASE_H_
#define ACLD_INC_ACL_ACL_BASE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef ACL_FUNC_VISIBILITY
#define ACL_FUNC_VISIBILITY __attribute__((visibility("default")))
#endif

#if defined(__GNUC__) && (__GNUC__ >= 6)
#define ACL_DEPRECATED __attribute__((deprecated))
#define ACL_DEPRECATED_MESSAGE(message) __attribute__((deprecated(message)))
#else
#define ACL_DEPRECATED
#define ACL_DEPRECATED_MESSAGE(message)
#endif

/* AscendCL interface version reported by aclrtGetVersion (1.17.0). */
#define ACL_MAJOR_VERSION 1
#define ACL_MINOR_VERSION 17
#define ACL_PATCH_VERSION 0

/* ---- Basic types and opaque handles ---- */
typedef int aclError;
typedef uint16_t aclFloat16;

typedef void *aclrtStream;
typedef void *aclrtEvent;
typedef void *aclrtNotify;
typedef void *aclrtContext;
typedef void *aclrtAllocatorDesc;
typedef void *aclrtAllocator;
typedef void *aclrtAllocatorBlock;
typedef void *aclrtAllocatorAddr;
typedef void *aclrtCntNotify;
typedef void *aclrtLabel;
typedef void *aclrtLabelList;
typedef void *aclrtMbuf;
typedef void *aclrtTaskGrp;
typedef void *aclmdlRITask;
typedef struct aclDataBuffer aclDataBuffer;

/* ---- Generic AscendCL error codes (CANN acl_base.h; static const int as in CANN) ---- */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-const-variable"
#endif
static const int ACL_ERROR_NONE = 0;
static const int ACL_SUCCESS = 0;
static const int ACL_ERROR_INVALID_EXCEPTION_INFO = -1;

static const int ACL_ERROR_INVALID_PARAM = 100000;
static const int ACL_ERROR_UNINITIALIZE = 100001;
static const int ACL_ERROR_REPEAT_INITIALIZE = 100002;
static const int ACL_ERROR_INVALID_FILE = 100003;
static const int ACL_ERROR_WRITE_FILE = 100004;
static const int ACL_ERROR_INVALID_FILE_SIZE = 100005;
static const int ACL_ERROR_PARSE_FILE = 100006;
static const int ACL_ERROR_FILE_MISSING_ATTR = 100007;
static const int ACL_ERROR_FILE_ATTR_INVALID = 100008;
static const int ACL_ERROR_INVALID_DUMP_CONFIG = 100009;
static const int ACL_ERROR_INVALID_PROFILING_CONFIG = 100010;
static const int ACL_ERROR_INVALID_MODEL_ID = 100011;
static const int ACL_ERROR_DESERIALIZE_MODEL = 100012;
static const int ACL_ERROR_PARSE_MODEL = 100013;
static const int ACL_ERROR_READ_MODEL_FAILURE = 100014;
static const int ACL_ERROR_MODEL_SIZE_INVALID = 100015;
static const int ACL_ERROR_MODEL_MISSING_ATTR = 100016;
static const int ACL_ERROR_MODEL_INPUT_NOT_MATCH = 100017;
static const int ACL_ERROR_MODEL_OUTPUT_NOT_MATCH = 100018;
static const int ACL_ERROR_MODEL_NOT_DYNAMIC = 100019;
static const int ACL_ERROR_OP_TYPE_NOT_MATCH = 100020;
static const int ACL_ERROR_OP_INPUT_NOT_MATCH = 100021;
static const int ACL_ERROR_OP_OUTPUT_NOT_MATCH = 100022;
static const int ACL_ERROR_OP_ATTR_NOT_MATCH = 100023;
static const int ACL_ERROR_OP_NOT_FOUND = 100024;
static const int ACL_ERROR_OP_LOAD_FAILED = 100025;
static const int ACL_ERROR_UNSUPPORTED_DATA_TYPE = 100026;
static const int ACL_ERROR_FORMAT_NOT_MATCH = 100027;
static const int ACL_ERROR_BIN_SELECTOR_NOT_REGISTERED = 100028;
static const int ACL_ERROR_KERNEL_NOT_FOUND = 100029;
static const int ACL_ERROR_BIN_SELECTOR_ALREADY_REGISTERED = 100030;
static const int ACL_ERROR_KERNEL_ALREADY_REGISTERED = 100031;
static const int ACL_ERROR_INVALID_QUEUE_ID = 100032;
static const int ACL_ERROR_REPEAT_SUBSCRIBE = 100033;
static const int ACL_ERROR_STREAM_NOT_SUBSCRIBE = 100034;
static const int ACL_ERROR_THREAD_NOT_SUBSCRIBE = 100035;
static const int ACL_ERROR_WAIT_CALLBACK_TIMEOUT = 100036;
static const int ACL_ERROR_REPEAT_FINALIZE = 100037;
static const int ACL_ERROR_NOT_STATIC_AIPP = 100038;
static const int ACL_ERROR_COMPILING_STUB_MODE = 100039;
static const int ACL_ERROR_GROUP_NOT_SET = 100040;
static const int ACL_ERROR_GROUP_NOT_CREATE = 100041;
static const int ACL_ERROR_PROF_ALREADY_RUN = 100042;
static const int ACL_ERROR_PROF_NOT_RUN = 100043;
static const int ACL_ERROR_DUMP_ALREADY_RUN = 100044;
static const int ACL_ERROR_DUMP_NOT_RUN = 100045;
static const int ACL_ERROR_PROF_REPEAT_SUBSCRIBE = 148046;
static const int ACL_ERROR_PROF_API_CONFLICT = 148047;
static const int ACL_ERROR_INVALID_MAX_OPQUEUE_NUM_CONFIG = 148048;
static const int ACL_ERROR_INVALID_OPP_PATH = 148049;
static const int ACL_ERROR_OP_UNSUPPORTED_DYNAMIC = 148050;
static const int ACL_ERROR_RELATIVE_RESOURCE_NOT_CLEARED = 148051;
static const int ACL_ERROR_UNSUPPORTED_JPEG = 148052;
static const int ACL_ERROR_INVALID_BUNDLE_MODEL_ID = 148053;

static const int ACL_ERROR_BAD_ALLOC = 200000;
static const int ACL_ERROR_API_NOT_SUPPORT = 200001;
static const int ACL_ERROR_INVALID_DEVICE = 200002;
static const int ACL_ERROR_MEMORY_ADDRESS_UNALIGNED = 200003;
static const int ACL_ERROR_RESOURCE_NOT_MATCH = 200004;
static const int ACL_ERROR_INVALID_RESOURCE_HANDLE = 200005;
static const int ACL_ERROR_FEATURE_UNSUPPORTED = 200006;
static const int ACL_ERROR_PROF_MODULES_UNSUPPORTED = 200007;

static const int ACL_ERROR_STORAGE_OVER_LIMIT = 300000;

static const int ACL_ERROR_INTERNAL_ERROR = 500000;
static const int ACL_ERROR_FAILURE = 500001;
static const int ACL_ERROR_GE_FAILURE = 500002;
static const int ACL_ERROR_RT_FAILURE = 500003;
static const int ACL_ERROR_DRV_FAILURE = 500004;
static const int ACL_ERROR_PROFILING_FAILURE = 500005;
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

/* ---- Runtime error codes (CANN error_codes/rt_error_codes.h) ---- */
#ifndef __INC_EXTERNEL_RT_ERROR_CODES_H__
#define __INC_EXTERNEL_RT_ERROR_CODES_H__
#define ACL_RT_SUCCESS 0
/* 1070xx: parameter / usage errors */
#define ACL_ERROR_RT_PARAM_INVALID 107000
#define ACL_ERROR_RT_INVALID_DEVICEID 107001
#define ACL_ERROR_RT_CONTEXT_NULL 107002
#define ACL_ERROR_RT_STREAM_CONTEXT 107003
#define ACL_ERROR_RT_MODEL_CONTEXT 107004
#define ACL_ERROR_RT_STREAM_MODEL 107005
#define ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID 107006
#define ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL 107007
#define ACL_ERROR_RT_ADDR_UNALIGNED 107008
#define ACL_ERROR_RT_FILE_OPEN 107009
#define ACL_ERROR_RT_FILE_WRITE 107010
#define ACL_ERROR_RT_STREAM_SUBSCRIBE 107011
#define ACL_ERROR_RT_THREAD_SUBSCRIBE 107012
#define ACL_ERROR_RT_GROUP_NOT_SET 107013
#define ACL_ERROR_RT_GROUP_NOT_CREATE 107014
#define ACL_ERROR_RT_STREAM_NO_CB_REG 107015
#define ACL_ERROR_RT_INVALID_MEMORY_TYPE 107016
#define ACL_ERROR_RT_INVALID_HANDLE 107017
#define ACL_ERROR_RT_INVALID_MALLOC_TYPE 107018
#define ACL_ERROR_RT_WAIT_TIMEOUT 107019
#define ACL_ERROR_RT_TASK_TIMEOUT 107020
#define ACL_ERROR_RT_SYSPARAMOPT_NOT_SET 107021
#define ACL_ERROR_RT_DEVICE_TASK_ABORT 107022
#define ACL_ERROR_RT_STREAM_ABORT 107023
#define ACL_ERROR_RT_CAPTURE_DEPENDENCY 107024
#define ACL_ERROR_RT_STREAM_UNJOINED 107025
#define ACL_ERROR_RT_MODEL_CAPTURED 107026
#define ACL_ERROR_RT_STREAM_CAPTURED 107027
#define ACL_ERROR_RT_EVENT_CAPTURED 107028
#define ACL_ERROR_RT_STREAM_NOT_CAPTURED 107029
#define ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT 107030
#define ACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT 107031
#define ACL_ERROR_STREAM_CAPTURE_CONFLICT 107032
#define ACL_ERROR_STREAM_TASK_GROUP_STATUS 107033
#define ACL_ERROR_STREAM_TASK_GROUP_INTR 107034
#define ACL_ERROR_RT_TASK_ABORT_STOP 107035
#define ACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED 107036
#define ACL_ERROR_RT_MODEL_RUNNING 107037
#define ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD 107038
#define ACL_ERROR_RT_INSUFFICIENT_INPUT_ARRAY 107039
#define ACL_ERROR_RT_MODEL_UPDATE_FAILED 107040
#define ACL_ERROR_RT_CAPTURE_MODE_BLOCK_ASYNC 107041
/* 2070xx: resource / capability errors */
#define ACL_ERROR_RT_FEATURE_NOT_SUPPORT 207000
#define ACL_ERROR_RT_MEMORY_ALLOCATION 207001
#define ACL_ERROR_RT_MEMORY_FREE 207002
#define ACL_ERROR_RT_AICORE_OVER_FLOW 207003
#define ACL_ERROR_RT_NO_DEVICE 207004
#define ACL_ERROR_RT_RESOURCE_ALLOC_FAIL 207005
#define ACL_ERROR_RT_NO_PERMISSION 207006
#define ACL_ERROR_RT_NO_EVENT_RESOURCE 207007
#define ACL_ERROR_RT_NO_STREAM_RESOURCE 207008
#define ACL_ERROR_RT_NO_NOTIFY_RESOURCE 207009
#define ACL_ERROR_RT_NO_MODEL_RESOURCE 207010
#define ACL_ERROR_RT_NO_CDQ_RESOURCE 207011
#define ACL_ERROR_RT_OVER_LIMIT 207012
#define ACL_ERROR_RT_QUEUE_EMPTY 207013
#define ACL_ERROR_RT_QUEUE_FULL 207014
#define ACL_ERROR_RT_REPEATED_INIT 207015
#define ACL_ERROR_RT_AIVEC_OVER_FLOW 207016
#define ACL_ERROR_RT_OVER_FLOW 207017
#define ACL_ERROR_RT_DEVICE_OOM 207018
#define ACL_ERROR_RT_FEATURE_NOT_SUPPORT_UPDATE_OP 207019
#define ACL_ERROR_RT_TIMEOUT 207020
/* 5070xx: internal / execution errors */
#define ACL_ERROR_RT_INTERNAL_ERROR 507000
#define ACL_ERROR_RT_TS_ERROR 507001
#define ACL_ERROR_RT_STREAM_TASK_FULL 507002
#define ACL_ERROR_RT_STREAM_TASK_EMPTY 507003
#define ACL_ERROR_RT_STREAM_NOT_COMPLETE 507004
#define ACL_ERROR_RT_END_OF_SEQUENCE 507005
#define ACL_ERROR_RT_EVENT_NOT_COMPLETE 507006
#define ACL_ERROR_RT_CONTEXT_RELEASE_ERROR 507007
#define ACL_ERROR_RT_SOC_VERSION 507008
#define ACL_ERROR_RT_TASK_TYPE_NOT_SUPPORT 507009
#define ACL_ERROR_RT_LOST_HEARTBEAT 507010
#define ACL_ERROR_RT_MODEL_EXECUTE 507011
#define ACL_ERROR_RT_REPORT_TIMEOUT 507012
#define ACL_ERROR_RT_SYS_DMA 507013
#define ACL_ERROR_RT_AICORE_TIMEOUT 507014
#define ACL_ERROR_RT_AICORE_EXCEPTION 507015
#define ACL_ERROR_RT_AICORE_TRAP_EXCEPTION 507016
#define ACL_ERROR_RT_AICPU_TIMEOUT 507017
#define ACL_ERROR_RT_AICPU_EXCEPTION 507018
#define ACL_ERROR_RT_AICPU_DATADUMP_RSP_ERR 507019
#define ACL_ERROR_RT_AICPU_MODEL_RSP_ERR 507020
#define ACL_ERROR_RT_PROFILING_ERROR 507021
#define ACL_ERROR_RT_IPC_ERROR 507022
#define ACL_ERROR_RT_MODEL_ABORT_NORMAL 507023
#define ACL_ERROR_RT_KERNEL_UNREGISTERING 507024
#define ACL_ERROR_RT_RINGBUFFER_NOT_INIT 507025
#define ACL_ERROR_RT_RINGBUFFER_NO_DATA 507026
#define ACL_ERROR_RT_KERNEL_LOOKUP 507027
#define ACL_ERROR_RT_KERNEL_DUPLICATE 507028
#define ACL_ERROR_RT_DEBUG_REGISTER_FAIL 507029
#define ACL_ERROR_RT_DEBUG_UNREGISTER_FAIL 507030
#define ACL_ERROR_RT_LABEL_CONTEXT 507031
#define ACL_ERROR_RT_PROGRAM_USE_OUT 507032
#define ACL_ERROR_RT_DEV_SETUP_ERROR 507033
#define ACL_ERROR_RT_VECTOR_CORE_TIMEOUT 507034
#define ACL_ERROR_RT_VECTOR_CORE_EXCEPTION 507035
#define ACL_ERROR_RT_VECTOR_CORE_TRAP_EXCEPTION 507036
#define ACL_ERROR_RT_CDQ_BATCH_ABNORMAL 507037
#define ACL_ERROR_RT_DIE_MODE_CHANGE_ERROR 507038
#define ACL_ERROR_RT_DIE_SET_ERROR 507039
#define ACL_ERROR_RT_INVALID_DIEID 507040
#define ACL_ERROR_RT_DIE_MODE_NOT_SET 507041
#define ACL_ERROR_RT_AICORE_TRAP_READ_OVERFLOW 507042
#define ACL_ERROR_RT_AICORE_TRAP_WRITE_OVERFLOW 507043
#define ACL_ERROR_RT_VECTOR_CORE_TRAP_READ_OVERFLOW 507044
#define ACL_ERROR_RT_VECTOR_CORE_TRAP_WRITE_OVERFLOW 507045
#define ACL_ERROR_RT_STREAM_SYNC_TIMEOUT 507046
#define ACL_ERROR_RT_EVENT_SYNC_TIMEOUT 507047
#define ACL_ERROR_RT_FFTS_PLUS_TIMEOUT 507048
#define ACL_ERROR_RT_FFTS_PLUS_EXCEPTION 507049
#define ACL_ERROR_RT_FFTS_PLUS_TRAP_EXCEPTION 507050
#define ACL_ERROR_RT_SEND_MSG 507051
#define ACL_ERROR_RT_COPY_DATA 507052
#define ACL_ERROR_RT_DEVICE_MEM_ERROR 507053
#define ACL_ERROR_RT_HBM_MULTI_BIT_ECC_ERROR 507054
#define ACL_ERROR_RT_SUSPECT_DEVICE_MEM_ERROR 507055
#define ACL_ERROR_RT_LINK_ERROR 507056
#define ACL_ERROR_RT_SUSPECT_REMOTE_ERROR 507057
#define ACL_ERROR_RT_DRV_INTERNAL_ERROR 507899
#define ACL_ERROR_RT_AICPU_INTERNAL_ERROR 507900
#define ACL_ERROR_RT_SOCKET_CLOSE 507901
#define ACL_ERROR_RT_AICPU_INFO_LOAD_RSP_ERR 507902
#define ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED 507903
#define ACL_ERROR_RT_COMM_OP_RETRY_FAIL 507904
#endif /* __INC_EXTERNEL_RT_ERROR_CODES_H__ */

/* ---- Data types and formats (values as in CANN) ---- */
typedef enum {
    ACL_DT_UNDEFINED = -1,
    ACL_FLOAT = 0,
    ACL_FLOAT16 = 1,
    ACL_INT8 = 2,
    ACL_INT32 = 3,
    ACL_UINT8 = 4,
    ACL_INT16 = 6,
    ACL_UINT16 = 7,
    ACL_UINT32 = 8,
    ACL_INT64 = 9,
    ACL_UINT64 = 10,
    ACL_DOUBLE = 11,
    ACL_BOOL = 12,
    ACL_STRING = 13,
    ACL_COMPLEX64 = 16,
    ACL_COMPLEX128 = 17,
    ACL_BF16 = 27,
    ACL_INT4 = 29,
    ACL_UINT1 = 30,
    ACL_COMPLEX32 = 33,
    ACL_HIFLOAT8 = 34,
    ACL_FLOAT8_E5M2 = 35,
    ACL_FLOAT8_E4M3FN = 36,
    ACL_FLOAT8_E8M0 = 37,
    ACL_FLOAT6_E3M2 = 38,
    ACL_FLOAT6_E2M3 = 39,
    ACL_FLOAT4_E2M1 = 40,
    ACL_FLOAT4_E1M2 = 41
} aclDataType;

typedef enum {
    ACL_FORMAT_UNDEFINED = -1,
    ACL_FORMAT_NCHW = 0,
    ACL_FORMAT_NHWC = 1,
    ACL_FORMAT_ND = 2,
    ACL_FORMAT_NC1HWC0 = 3,
    ACL_FORMAT_FRACTAL_Z = 4,
    ACL_FORMAT_NC1HWC0_C04 = 12,
    ACL_FORMAT_HWCN = 16,
    ACL_FORMAT_NDHWC = 27,
    ACL_FORMAT_FRACTAL_NZ = 29,
    ACL_FORMAT_NCDHW = 30,
    ACL_FORMAT_NDC1HWC0 = 32,
    ACL_FRACTAL_Z_3D = 33,
    ACL_FORMAT_NC = 35,
    ACL_FORMAT_NCL = 47,
    ACL_FORMAT_FRACTAL_NZ_C0_16 = 50,
    ACL_FORMAT_FRACTAL_NZ_C0_32 = 51,
    ACL_FORMAT_FRACTAL_NZ_C0_2 = 52,
    ACL_FORMAT_FRACTAL_NZ_C0_4 = 53,
    ACL_FORMAT_FRACTAL_NZ_C0_8 = 54,
} aclFormat;

/* ---- Init / finalize callback registry ---- */
typedef enum aclRegisterCallbackType {
    ACL_REG_TYPE_ACL_MODEL,
    ACL_REG_TYPE_ACL_OP_EXECUTOR,
    ACL_REG_TYPE_ACL_OP_CBLAS,
    ACL_REG_TYPE_ACL_OP_COMPILER,
    ACL_REG_TYPE_ACL_TDT_CHANNEL,
    ACL_REG_TYPE_ACL_TDT_QUEUE,
    ACL_REG_TYPE_ACL_DVPP,
    ACL_REG_TYPE_ACL_RETR,
    ACL_REG_TYPE_OTHER = 0xFFFF
} aclRegisterCallbackType;

typedef aclError (*aclInitCallbackFunc)(const char *configStr, size_t len, void *userData);
typedef aclError (*aclFinalizeCallbackFunc)(void *userData);

/* ---- Lifecycle ---- */
ACL_FUNC_VISIBILITY aclError aclInit(const char *configPath);
ACL_FUNC_VISIBILITY aclError aclFinalize(void);
/* refCount (may be NULL) receives the process reference count after the call. */
ACL_FUNC_VISIBILITY aclError aclFinalizeReference(uint64_t *refCount);

ACL_FUNC_VISIBILITY aclError aclInitCallbackRegister(aclRegisterCallbackType type, aclInitCallbackFunc cbFunc,
                                                     void *userData);
ACL_FUNC_VISIBILITY aclError aclInitCallbackUnRegister(aclRegisterCallbackType type, aclInitCallbackFunc cbFunc);
ACL_FUNC_VISIBILITY aclError aclFinalizeCallbackRegister(aclRegisterCallbackType type,
                                                         aclFinalizeCallbackFunc cbFunc, void *userData);
ACL_FUNC_VISIBILITY aclError aclFinalizeCallbackUnRegister(aclRegisterCallbackType type,
                                                           aclFinalizeCallbackFunc cbFunc);

/* ---- Error reporting ---- */
ACL_FUNC_VISIBILITY const char *aclGetRecentErrMsg(void);

/* ---- Data types (docs/api-compat.md: sizes, and the FP16 rules for Inf and NaN) ---- */
ACL_FUNC_VISIBILITY size_t aclDataTypeSize(aclDataType dataType);
ACL_FUNC_VISIBILITY float aclFloat16ToFloat(aclFloat16 value);
ACL_FUNC_VISIBILITY aclFloat16 aclFloatToFloat16(float value);

/* ---- Data buffers: an address and a size, nothing more (docs/api-compat.md) ----
 * The memory stays the caller's: destroying a buffer does not free it. aclCreateDataBuffer takes NULL
 * data only with size 0 (an empty buffer). A dataBuffer that is NULL or no live buffer is refused
 * (ACL_ERROR_INVALID_PARAM; NULL or 0 from the getters). */
ACL_FUNC_VISIBILITY aclDataBuffer* aclCreateDataBuffer(void* data, size_t size);
ACL_FUNC_VISIBILITY aclError aclDestroyDataBuffer(const aclDataBuffer* dataBuffer);
ACL_FUNC_VISIBILITY aclError aclUpdateDataBuffer(aclDataBuffer* dataBuffer, void* data, size_t size);
ACL_FUNC_VISIBILITY void* aclGetDataBufferAddr(const aclDataBuffer* dataBuffer);
/* The size's low 32 bits. */
ACL_DEPRECATED_MESSAGE("use aclGetDataBufferSizeV2")
ACL_FUNC_VISIBILITY uint32_t aclGetDataBufferSize(const aclDataBuffer* dataBuffer);
ACL_FUNC_VISIBILITY size_t aclGetDataBufferSizeV2(const aclDataBuffer* dataBuffer);

/* ---- The rest of CANN's acl_base_rt.h: declared so that CANN programs compile and link; the
 * functions below are not supported yet (ACL_ERROR_API_NOT_SUPPORT, docs/api-compat.md) ---- */
typedef enum {
    ACL_DEBUG = 0,
    ACL_INFO = 1,
    ACL_WARNING = 2,
    ACL_ERROR = 3,
} aclLogLevel;

typedef enum { ACL_MEMTYPE_DEVICE = 0, ACL_MEMTYPE_HOST = 1, ACL_MEMTYPE_HOST_COMPILE_INDEPENDENT = 2 } aclMemType;

/* aclrtSetSysParamOpt and aclrtCtxSetSysParamOpt (acl_rt.h). */
typedef enum {
    ACL_OPT_DETERMINISTIC = 0,
    ACL_OPT_ENABLE_DEBUG_KERNEL = 1,
    ACL_OPT_STRONG_CONSISTENCY ACL_DEPRECATED_MESSAGE("use ACL_OPT_DETERMINISTIC with value 2") = 2,
    ACL_OPT_ENABLE_KERNEL_EARLY_START = 3
} aclSysParamOpt;

typedef enum {
    ACL_DEVICE_INFO_UNDEFINED = -1,
    ACL_DEVICE_INFO_AI_CORE_NUM = 0,
    ACL_DEVICE_INFO_VECTOR_CORE_NUM = 1,
    ACL_DEVICE_INFO_L2_SIZE = 2
} aclDeviceInfo;

/* The application's log. Not supported yet: the message is dropped, and aclGetRecentErrMsg says so. */
ACL_FUNC_VISIBILITY void aclAppLog(aclLogLevel logLevel, const char* func, const char* file, uint32_t line,
                                   const char* fmt, ...);
#define ACL_APP_LOG(level, fmt, ...) aclAppLog(level, __FUNCTION__, __FILE__, __LINE__, fmt, ##__VA_ARGS__)

/* aclrtGetDeviceInfo (acl_rt.h) gives the core counts. */
ACL_FUNC_VISIBILITY aclError aclGetDeviceCapability(uint32_t deviceId, aclDeviceInfo deviceInfo, int64_t* value);

#ifdef __cplusplus
}
#endif

#endif /* ACLD_INC_ACL_ACL_BASE_H_ */
