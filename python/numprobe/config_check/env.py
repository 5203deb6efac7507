"""Environment variables that change what a training computes, as a pack keeps them. Ascend and
CUDA spell several differently (HCCL_* / NCCL_*, ASCEND_* / CUDA_*): a row holds both spellings.
The compare (src/config_check/config_compare_env_pip.cc) reads the same table, each pack with its
own device's spelling; keep the two in step."""
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


def _kept(name):
    if name in COMMON or name.startswith(PREFIXES):
        return True
    return any(name in pair[:2] for pair in DEVICE_PAIRS)


def collect():
    """The `env` member: {name: value} of the relevant variables of this process."""
    return json.dumps({k: v for k, v in sorted(os.environ.items()) if _kept(k)}, indent=4)
