"""The torch APIs msprobe records (its support_wrap_ops lists: mstt v8.3.3 and mindstudio-probe 26.2).

numprobe records the same set by default, so a numprobe dump and an msprobe dump of one computation
hold the same entries (an API called inside a recorded API is not recorded, so the set decides which
level of a composite op appears). The union of both releases, except ``empty`` and ``empty_like``,
which 26.2 dropped (their outputs are uninitialised memory). ``ones_like`` stays (v8.3.3 records the
seed gradient of ``loss.backward()``). tests/python/test_msprobe_live.py checks this table against
the installed msprobe. NUMPROBE_API_SET=all records every public torch callable instead.
"""

FUNCTIONAL = frozenset("""
adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool1d
adaptive_max_pool1d_with_indices adaptive_max_pool2d adaptive_max_pool2d_with_indices
adaptive_max_pool3d adaptive_max_pool3d_with_indices affine_grid alpha_dropout avg_pool1d
avg_pool2d avg_pool3d batch_norm bilinear binary_cross_entropy binary_cross_entropy_with_logits
celu celu_ channel_shuffle conv1d conv2d conv3d conv_tbc conv_transpose1d conv_transpose2d
conv_transpose3d cosine_embedding_loss cosine_similarity cross_entropy ctc_loss dropout
dropout1d dropout2d dropout3d elu elu_ embedding embedding_bag feature_alpha_dropout fold
fractional_max_pool2d fractional_max_pool2d_with_indices fractional_max_pool3d
fractional_max_pool3d_with_indices gaussian_nll_loss gelu glu grid_sample group_norm
gumbel_softmax hardshrink hardsigmoid hardswish hardtanh hardtanh_ hinge_embedding_loss
huber_loss instance_norm interpolate kl_div l1_loss layer_norm leaky_relu leaky_relu_ linear
local_response_norm log_softmax logsigmoid lp_pool1d lp_pool2d lp_pool3d margin_ranking_loss
max_pool1d max_pool1d_with_indices max_pool2d max_pool2d_with_indices max_pool3d
max_pool3d_with_indices max_unpool1d max_unpool2d max_unpool3d mish mse_loss
multi_head_attention_forward multi_margin_loss multilabel_margin_loss
multilabel_soft_margin_loss nll_loss normalize one_hot pad pairwise_distance pdist pixel_shuffle
pixel_unshuffle poisson_nll_loss prelu relu relu6 relu_ rrelu rrelu_
scaled_dot_product_attention selu selu_ sigmoid silu smooth_l1_loss soft_margin_loss softmax
softmin softplus softshrink softsign tanh tanhshrink threshold threshold_ triplet_margin_loss
triplet_margin_with_distance_loss unfold upsample upsample_bilinear upsample_nearest
""".split())

TENSOR = frozenset("""
__add__ __and__ __bool__ __div__ __eq__ __floordiv__ __ge__ __gt__ __iadd__ __iand__ __idiv__
__ifloordiv__ __ilshift__ __imod__ __imul__ __ior__ __ipow__ __irshift__ __isub__ __ixor__
__le__ __lshift__ __lt__ __matmul__ __mod__ __mul__ __ne__ __nonzero__ __or__ __pow__ __radd__
__rdiv__ __rmod__ __rmul__ __ror__ __rpow__ __rshift__ __rsub__ __rxor__ __setitem__ __sub__
__truediv__ __xor__ abs abs_ absolute absolute_ acos acos_ acosh acosh_ add add_ addbmm addbmm_
addcdiv addcdiv_ addcmul addcmul_ addmm addmm_ addmv addmv_ addr addr_ adjoint align_as align_to
all allclose amax amin aminmax angle any arccos arccos_ arccosh arccosh_ arcsin arcsin_ arcsinh
arcsinh_ arctan arctan2 arctan2_ arctan_ arctanh arctanh_ argmax argmin argsort argwhere asin
asin_ asinh asinh_ atan atan2 atan2_ atan_ atanh atanh_ baddbmm baddbmm_ bernoulli bernoulli_
bfloat16 bincount bitwise_and bitwise_and_ bitwise_left_shift bitwise_left_shift_ bitwise_not
bitwise_not_ bitwise_or bitwise_or_ bitwise_right_shift bitwise_right_shift_ bitwise_xor
bitwise_xor_ bmm bool broadcast_to byte cauchy_ ceil ceil_ cfloat char cholesky cholesky_inverse
cholesky_solve chunk clamp clamp_ clamp_max clamp_max_ clamp_min clamp_min_ clip clip_
conj_physical copysign copysign_ corrcoef cos cos_ cosh cosh_ count_nonzero cov cummax cummin
cumprod cumprod_ cumsum cumsum_ deg2rad deg2rad_ det diag diag_embed diagflat diagonal
diagonal_scatter diff digamma digamma_ dist div div_ divide divide_ dot double dsplit eig eq eq_
equal erf erf_ erfc erfc_ erfinv erfinv_ exp exp2 exp2_ exp_ expand expand_as expm1 expm1_
exponential_ fill_ fill_diagonal_ fix fix_ flatten flip fliplr flipud float float_power
float_power_ floor floor_ floor_divide floor_divide_ fmax fmin fmod fmod_ frac frac_ frexp
gather gcd gcd_ ge ge_ geometric_ geqrf ger greater greater_ greater_equal greater_equal_ gt gt_
half hardshrink heaviside heaviside_ histc histogram hsplit hypot hypot_ i0 i0_ igamma igamma_
igammac igammac_ index_add index_add_ index_copy index_copy_ index_fill index_fill_ index_put
index_put_ index_select inner int inverse isclose isfinite isinf isnan isneginf isposinf isreal
kron kthvalue lcm lcm_ ldexp ldexp_ le le_ lerp lerp_ less less_ less_equal less_equal_ lgamma
lgamma_ log log10 log10_ log1p log1p_ log2 log2_ log_ log_normal_ log_softmax logaddexp
logaddexp2 logcumsumexp logdet logical_and logical_and_ logical_not logical_not_ logical_or
logical_or_ logical_xor logical_xor_ logit logit_ logsumexp long lstsq lt lt_ lu lu_solve map2_
map_ masked_fill masked_fill_ masked_scatter masked_scatter_ masked_select matmul matrix_exp
matrix_power max maximum mean median min minimum mm mode moveaxis movedim msort mul mul_
multinomial multiply multiply_ mv mvlgamma mvlgamma_ nan_to_num nan_to_num_ nanmean nanmedian
nanquantile nansum narrow narrow_copy ne ne_ neg neg_ negative negative_ nextafter nextafter_
nonzero norm normal_ not_equal not_equal_ numpy orgqr ormqr outer permute pinverse polygamma
polygamma_ pow pow_ prelu prod put_ q_zero_point qr quantile rad2deg rad2deg_ ravel reciprocal
reciprocal_ relu relu_ remainder remainder_ renorm renorm_ repeat repeat_interleave reshape
reshape_as resize_ resize_as_ resolve_neg roll rot90 round round_ rsqrt rsqrt_ scatter scatter_
scatter_add scatter_add_ select sgn sgn_ short sigmoid sigmoid_ sign sign_ signbit sin sin_ sinc
sinc_ sinh sinh_ slice_scatter slogdet smm softmax solve sort split split_with_sizes sqrt sqrt_
square square_ squeeze squeeze_ sspaddmm std stft stride sub sub_ subtract sum sum_to_size svd
swapaxes swapdims swapdims_ symeig t t_ take take_along_dim tan tan_ tanh tanh_ tensor_split
tile to topk transpose transpose_ triangular_solve tril tril_ triu triu_ true_divide
true_divide_ trunc trunc_ type_as unbind unflatten unfold unique unique_consecutive unsafe_chunk
unsafe_split unsafe_split_with_sizes unsqueeze unsqueeze_ var vdot view_as vsplit where xlogy
xlogy_
""".split())

TORCH = frozenset("""
_adaptive_avg_pool2d _add_relu _add_relu_ _aminmax _batch_norm_impl_index _convolution
_foreach_norm _fused_adamw_ _softmax_backward_data abs abs_ absolute acos acos_ acosh acosh_
adaptive_avg_pool1d adaptive_max_pool1d add addbmm addcdiv addcmul addmm addmv addmv_ addr
affine_grid_generator align_tensors all alpha_dropout alpha_dropout_ amax amin aminmax angle any
arange arccos arccos_ arccosh arccosh_ arcsin arcsin_ arcsinh arcsinh_ arctan arctan2 arctan_
arctanh arctanh_ argmax argmin argsort argwhere asin asin_ asinh asinh_ atan atan2 atan_ atanh
atanh_ atleast_1d atleast_2d atleast_3d avg_pool1d baddbmm bartlett_window
batch_norm_backward_elemt batch_norm_backward_reduce batch_norm_elemt batch_norm_gather_stats
batch_norm_gather_stats_with_counts batch_norm_stats batch_norm_update_stats bernoulli bilinear
binary_cross_entropy_with_logits bincount binomial bitwise_and bitwise_not bitwise_or
bitwise_xor blackman_window block_diag bmm broadcast_tensors broadcast_to bucketize
cartesian_prod cat cdist ceil ceil_ celu celu_ chain_matmul channel_shuffle cholesky
cholesky_inverse cholesky_solve choose_qparams_optimized chunk clamp clamp_ clamp_max clamp_max_
clamp_min clamp_min_ clip clip_ clone column_stack combinations concat concatenate
constant_pad_nd conv1d conv2d conv3d conv_tbc conv_transpose1d conv_transpose2d conv_transpose3d
convolution copysign cos cos_ cosh cosh_ cosine_embedding_loss cosine_similarity count_nonzero
cov cross ctc_loss cummax cummin cumprod cumsum cumulative_trapezoid deg2rad deg2rad_ det diag
diag_embed diagflat diagonal diagonal_scatter diff digamma dist div divide dot dropout dropout_
dsmm dsplit dstack eig einsum embedding embedding_bag embedding_renorm_ eq equal erf erf_ erfc
erfc_ erfinv exp exp2 exp2_ exp_ expm1 expm1_ eye feature_alpha_dropout feature_alpha_dropout_
feature_dropout feature_dropout_ fill_ fix fix_ flatten flip fliplr flipud float_power floor
floor_ floor_divide fmax fmin fmod frac frac_ frexp frobenius_norm full full_like gather gcd
gcd_ ge geqrf ger greater greater_equal grid_sampler grid_sampler_2d grid_sampler_3d group_norm
gru gru_cell gt hamming_window hann_window hardshrink heaviside hinge_embedding_loss histc
histogram histogramdd hsmm hsplit hspmm hstack hypot i0 i0_ igamma igammac index_add index_copy
index_fill index_put index_put_ index_select inner instance_norm inverse isclose isfinite isin
isinf isnan isneginf isposinf istft kaiser_window kl_div kron kthvalue layer_norm lcm lcm_ ldexp
ldexp_ le lerp less less_equal lgamma linalg.cholesky_ex linalg.cond linalg.cross linalg.det
linalg.diagonal linalg.householder_product linalg.inv linalg.inv_ex linalg.ldl_factor
linalg.ldl_factor_ex linalg.lstsq linalg.lu linalg.lu_factor linalg.lu_factor_ex linalg.matmul
linalg.matrix_exp linalg.matrix_norm linalg.matrix_power linalg.matrix_rank linalg.multi_dot
linalg.norm linalg.pinv linalg.qr linalg.slogdet linalg.solve linalg.solve_ex linalg.svd
linalg.svdvals linalg.tensorsolve linalg.vander linalg.vecdot linalg.vector_norm linspace log
log10 log10_ log1p log1p_ log2 log2_ log_ log_softmax logaddexp logaddexp2 logcumsumexp logdet
logical_and logical_not logical_or logical_xor logit logit_ logspace logsumexp lstm lstm_cell
lstsq lt lu_solve lu_unpack margin_ranking_loss masked_fill masked_scatter masked_select matmul
matrix_exp matrix_power matrix_rank max max_pool1d max_pool1d_with_indices max_pool2d max_pool3d
maximum mean median min minimum mm mode moveaxis movedim msort mul multinomial multiply mv
mvlgamma nan_to_num nan_to_num_ nanmean nanmedian nanquantile nansum narrow narrow_copy
native_batch_norm native_group_norm native_layer_norm native_norm ne neg neg_ negative negative_
nextafter nonzero norm norm_except_dim normal not_equal nuclear_norm ones_like outer
pairwise_distance pdist permute pinverse pixel_shuffle pixel_unshuffle poisson poisson_nll_loss
polar polygamma pow prelu prod qr quantile rad2deg rad2deg_ range ravel real reciprocal
reciprocal_ relu relu_ remainder renorm repeat_interleave reshape resize_as_ resolve_neg roll
rot90 round round_ row_stack rrelu rrelu_ rsqrt rsqrt_ rsub saddmm scalar_tensor scatter
scatter_add searchsorted select selu selu_ sgn sigmoid sigmoid_ sign signbit sin sin_ sinc sinc_
sinh sinh_ slogdet smm softmax solve sort sparse_coo_tensor split split_with_sizes spmm sqrt
sqrt_ square square_ squeeze sspaddmm stack std std_mean stft sub subtract sum svd swapaxes
swapdims symeig t take take_along_dim tan tan_ tanh tanh_ tensor_split tensordot threshold
threshold_ tile topk transpose trapz triangular_solve tril tril_indices triplet_margin_loss triu
triu_indices true_divide trunc trunc_ unbind unflatten unique_consecutive unsafe_chunk
unsafe_split unsafe_split_with_sizes unsqueeze vander var var_mean vdot vsplit vstack where
xlogy xlogy_
""".split())

VF = frozenset("""
lstm
""".split())
