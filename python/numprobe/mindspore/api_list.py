"""The MindSpore APIs numprobe wraps at levels L1 and mix, by namespace and msprobe's prefix.

msprobe names MindSpore APIs by where they are called from: ``mindspore.ops`` as ``Functional``,
``mindspore.Tensor`` methods as ``Tensor``, ``mindspore.mint`` as ``Mint``,
``mindspore.mint.nn.functional`` as ``MintFunctional`` (its support_wrap_ops.yaml lists several
hundred). This is a subset: the computing APIs of training code (arithmetic, activations,
normalisation, reductions, shapes, losses, comparisons), each checked to exist in MindSpore 2.10.
A name missing from the installed MindSpore is skipped, never an error. Primitives held by cells
(``nn.Dense``'s MatMul, ``nn.LayerNorm``'s LayerNorm) are found on the model, not listed here.
"""

OPS = """abs acos add addmm argmax argmin asin atan bmm broadcast_to cat ceil clamp clip concat conv1d
conv2d cos cosh cumsum dense div dropout einsum elu equal erf exp expand_dims flatten floor gather
gather_d ge gelu greater gt hardswish layer_norm le leaky_relu less log log_softmax logsumexp lt
masked_fill matmul max maximum mean min minimum mish mse_loss mul nan_to_num neg norm ones_like outer
pad permute pow prod reduce_max reduce_mean reduce_sum relu relu6 repeat_interleave reshape rsqrt
sigmoid sign silu sin sinh softmax softplus split sqrt square squeeze stack sub sum tanh tile topk
transpose tril triu unsqueeze where zeros_like cross_entropy binary_cross_entropy_with_logits nll_loss
l1_loss smooth_l1_loss batch_norm bias_add dropout2d avg_pool2d max_pool2d adaptive_avg_pool2d
interpolate one_hot embedding scatter index_select unique chunk narrow roll flip baddbmm logical_and
logical_or logical_not not_equal isfinite isnan erfinv lerp addcmul addcdiv cumprod var std sort
fill""".split()

MINT = """abs add addmm all any arange argmax bmm broadcast_to cat clamp cos cumsum div einsum eq erf exp
flatten floor gather ge gt isclose isfinite le log logical_and logical_not logical_or lt masked_select
matmul max maximum mean min minimum mul ne neg norm ones ones_like permute pow prod reciprocal
repeat_interleave rsqrt sigmoid sin softmax sort split sqrt square squeeze stack sub sum tanh tile topk
transpose tril triu unsqueeze where zeros zeros_like baddbmm outer cross""".split()

MINT_FUNCTIONAL = """relu gelu silu sigmoid softmax log_softmax dropout layer_norm linear embedding
cross_entropy mse_loss l1_loss binary_cross_entropy_with_logits pad interpolate conv2d max_pool2d
avg_pool2d batch_norm group_norm normalize one_hot tanh leaky_relu elu softplus hardswish mish
nll_loss""".split()

TENSOR = """__add__ __radd__ __iadd__ __sub__ __rsub__ __isub__ __mul__ __rmul__ __imul__ __truediv__
__rtruediv__ __itruediv__ __matmul__ __pow__ __neg__ __getitem__ __setitem__ __eq__ __ne__ __lt__
__le__ __gt__ __ge__ __and__ __or__ __abs__ __bool__ abs add addmm all any argmax astype bmm clamp clip
cos cumsum div exp expand_as expand_dims flatten floor gather log masked_fill matmul max mean min mul
neg norm permute pow reshape rsqrt sigmoid sin softmax split sqrt square squeeze sub sum swapaxes tanh
tile transpose unsqueeze view view_as where repeat chunk narrow var std prod round sign type_as fill_
zero_ copy_ add_ mul_ sub_ div_""".split()

# Collective communication, as msprobe's support_wrap_ops.yaml lists it: ``mindspore.communication.
# comm_func`` as ``Distributed``, ``mindspore.mint.distributed`` as ``MintDistributed``.
COMM_FUNC = """all_reduce all_gather_into_tensor reduce reduce_scatter_tensor
all_to_all_single_with_output_shape all_to_all_with_output_shape batch_isend_irecv broadcast
gather_into_tensor scatter_tensor send recv isend irecv""".split()

MINT_DISTRIBUTED = """send recv broadcast all_reduce reduce all_gather gather isend irecv scatter
reduce_scatter all_to_all_single all_to_all all_gather_into_tensor reduce_scatter_tensor
batch_isend_irecv""".split()

DISTRIBUTED_PREFIXES = ("Distributed", "MintDistributed")

# Calls that change an argument in place: their inputs must stay the caller's objects, so no
# backward hook is put on them (the gradient hook returns a new tensor object); they get forward
# entries only.
IN_PLACE = {"__setitem__", "assign", "assign_add", "assign_sub", "scatter_update", "copy_"}


def is_in_place(name):
    return name in IN_PLACE or (name.endswith("_") and not name.endswith("__")) or (
        name.startswith("__i") and name not in ("__invert__",))
