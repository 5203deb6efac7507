"""Environment variables that change what a training computes. Ascend and CUDA spell several of
them differently (HCCL_* / NCCL_*, ASCEND_* / CUDA_*): a row holds both spellings, and a pack is
read with the spelling of its own device (an Ascend pack is one with an ASCEND* variable), so a
GPU run compares against an NPU run name for name. msprobe's env.yaml pairs the same variables."""
import json
import os

# (Ascend name, CUDA name, value when unset). None: the variable does not exist on that side.
DEVICE_PAIRS = (
    ("HCCL_DETERMINISTIC", "NCCL_DETERMINISTIC", "False"),
    ("HCCL_ALGO", "NCCL_ALGO", None),
    ("HCCL_BUFFSIZE", "NCCL_BUFFSIZE", None),
    ("HCCL_INTRA_ROCE_ENABLE", None, "0"),
    ("HCCL_INTRA_PCIE_ENABLE", None, "1"),
    ("ASCEND_LAUNCH_BLOCKING", "CUDA_LAUNCH_BLOCKING", "0"),
    ("ASCEND_RT_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", None),
    ("LCCL_DETERMINISTIC", None, "0"),
    (None, "CUBLAS_WORKSPACE_CONFIG", None),
    (None, "NVIDIA_TF32_OVERRIDE", None),
    (None, "NCCL_PROTO", None),
)
# The same name on both devices.
COMMON = ("PYTHONHASHSEED", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
          "TORCH_DETERMINISTIC", "CUDA_DEVICE_MAX_CONNECTIONS", "TORCH_CUDNN_V8_API_DISABLED",
          "DNNL_DEFAULT_FPMATH_MODE", "ONEDNN_DEFAULT_FPMATH_MODE", "WORLD_SIZE")
# A pack keeps these variables and every one under these prefixes, not the whole environment
# (which holds tokens and passwords a pack must not carry to another machine).
PREFIXES = ("HCCL_", "NCCL_", "ASCEND_", "CUDA_", "CUBLAS_", "CUDNN_", "LCCL_", "TORCH_",
            "PYTORCH_", "OMP_", "MKL_", "OPENBLAS_", "DNNL_", "ONEDNN_", "NVIDIA_TF32")
HEADER = ["bench_env_name", "cmp_env_name", "bench_value", "cmp_value", "level"]


def _kept(name):
    if name in COMMON or name.startswith(PREFIXES):
        return True
    return any(name in pair[:2] for pair in DEVICE_PAIRS)


def collect():
    """The `env` member: {name: value} of the relevant variables of this process."""
    return json.dumps({k: v for k, v in sorted(os.environ.items()) if _kept(k)}, indent=4)


def _is_ascend(env):
    return any("ASCEND" in k for k in env)


def compare(bench, cmp):
    """Rows for the variables that differ: level error when both sides have the variable and the
    values differ (unset reads as the default), warning when only one device has it."""
    rows = []
    bench_npu, cmp_npu = _is_ascend(bench), _is_ascend(cmp)
    pairs = list(DEVICE_PAIRS) + [(name, name, None) for name in COMMON]
    for npu_name, gpu_name, default in pairs:
        b_name = npu_name if bench_npu else gpu_name
        c_name = npu_name if cmp_npu else gpu_name
        b_value = bench.get(b_name, default) if b_name else None
        c_value = cmp.get(c_name, default) if c_name else None
        if b_name and c_name:
            if str(b_value) != str(c_value):
                rows.append([b_name, c_name, str(b_value), str(c_value), "error"])
        elif b_name and b_name in bench:
            rows.append([b_name, "only bench has this env", str(b_value), "", "warning"])
        elif c_name and c_name in cmp:
            rows.append(["only cmp has this env", c_name, "", str(c_value), "warning"])
    return rows
