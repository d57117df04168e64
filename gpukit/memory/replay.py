"""The op-by-op replay of one training step of the eager reference GPT (gpukit.bench.models): the
step's setup (EagerSetup), its parameter tensors (ReferenceGPT's, in order), the tape of
allocations and frees, and the events each op emits onto it.

Pure (no torch). `ReplayStep` emits one step's allocations and frees onto a `ReplayTape`, each tensor named
(e.g. 'L1.gsoftmax'); the tape keeps the running bytes per MemTracker category
(torch.distributed._tools.mem_tracker: Parameter, Buffer, Gradient, Activation, Temp, Optstate,
Other), the peak of each phase and the total after every event. Sizes in bytes, rounded up to 512 B
per tensor on CUDA (CUDACachingAllocator kMinBlockSize), not at all on CPU. What each op saves and
frees, the phases of a step and what is not modelled: gpukit.memory.eager's docstring; that module
runs the tape (predict_training_memory, replay_timeline) and re-exports the public names here.
Sources: what each op saves, tools/autograd/derivatives.yaml (PyTorch); autocast op lists,
aten/src/ATen/autocast_mode.cpp; optimizer temporaries, torch/optim/adam.py (_single_tensor_adam,
_multi_tensor_adam) and sgd.py; recompute, torch/utils/checkpoint.py (non-reentrant, early stop).

Used in: gpukit.memory.eager; EagerSetup and param_shapes also in gpukit.cli.validate,
gpukit.bench.measure, notebooks/01_what_fits_on_one_gpu, tests/test_models.py,
tests/test_memory_validation.py and tests/test_fuzz.py (through gpukit.memory.eager).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpukit.catalog import as_model
from gpukit.errors import require_choice, require_positive_int
from gpukit.specs import ModelSpec

CATEGORIES = ("Parameter", "Buffer", "Gradient", "Activation", "Temp", "Optstate", "Other")
RECOMPUTE_KINDS = ("none", "full")
REPLAY_PRECISIONS = ("fp32", "bf16-mixed")
REPLAY_OPTIMIZERS = ("adamw", "sgd-momentum", "sgd")
REPLAY_DEVICES = ("cpu", "cuda")
_CUDA_BLOCK = 512  # CUDACachingAllocator kMinBlockSize: every allocation is a multiple of 512 B


@dataclass(frozen=True)
class EagerSetup:
    """One training step of the reference model: batch shape, precision, optimizer, device."""

    seq_len: int = 128
    micro_batch: int = 2
    recompute: str = "none"  # none | full (torch.utils.checkpoint per block)
    precision: str = "fp32"  # fp32 | bf16-mixed (torch.autocast bf16, fp32 params/grads/states)
    optimizer: str = "adamw"  # adamw | sgd-momentum | sgd
    device: str = "cpu"  # cpu | cuda

    def __post_init__(self):
        object.__setattr__(self, "seq_len", require_positive_int("seq_len", self.seq_len))  # 128.0 -> 128
        object.__setattr__(self, "micro_batch", require_positive_int("micro_batch", self.micro_batch))
        require_choice("recompute", self.recompute, RECOMPUTE_KINDS)
        require_choice("precision", self.precision, REPLAY_PRECISIONS)
        require_choice("optimizer", self.optimizer, REPLAY_OPTIMIZERS)
        require_choice("device", self.device, REPLAY_DEVICES)


def param_shapes(spec: ModelSpec) -> list[tuple[str, int]]:
    """(name, numel) of every parameter tensor in ReferenceGPT.parameters() order (tied: once)."""
    spec = as_model(spec, "spec")  # a catalog name too
    h, f, q = spec.hidden, spec.ffn_hidden, spec.q_dim
    out = [("wte.weight", spec.vocab * h), ("wpe.weight", spec.max_seq * h)]
    for i in range(spec.n_layers):
        p = f"blocks.{i}."
        out += [
            (p + "ln1.weight", h),
            (p + "ln1.bias", h),
            (p + "attn.qkv.weight", 3 * q * h),
            (p + "attn.qkv.bias", 3 * q),
            (p + "attn.proj.weight", q * h),
            (p + "attn.proj.bias", h),
            (p + "ln2.weight", h),
            (p + "ln2.bias", h),
            (p + "mlp.fc1.weight", f * h),
            (p + "mlp.fc1.bias", f),
            (p + "mlp.fc2.weight", h * f),
            (p + "mlp.fc2.bias", h),
        ]
    out += [("ln_f.weight", h), ("ln_f.bias", h)]
    if not spec.tied_embeddings:
        out.append(("lm_head.weight", spec.vocab * h))
    return out


class ReplayTape:
    """Replays allocations and frees; keeps the running total per category and the peak per phase."""

    def __init__(self, cuda: bool):
        self.cuda = cuda
        self.live: dict[str, list] = {}  # name -> [bytes, category]
        self.cur = dict.fromkeys(CATEGORIES, 0)
        self.total = 0
        self.saved: set[str] = set()  # saved for backward: a python release does not free them
        self.cache: list[str] = []  # autocast weight/bias casts, freed (unless saved) at autocast exit
        self.phase, self.default = "setup", "Other"
        self.peaks: dict[str, tuple[int, dict]] = {}
        self.peak_at: dict[str, str] = {}  # phase -> the allocation that reached the phase's peak
        self.trace: list[tuple[str, int]] = []  # (phase, total bytes) after every allocation and free

    def size(self, n: int) -> int:
        n = int(n)
        return -(-n // _CUDA_BLOCK) * _CUDA_BLOCK if self.cuda and n > 0 else n

    def begin(self, phase: str, default: str) -> None:
        self.phase, self.default = phase, default
        self.peaks[phase] = (self.total, dict(self.cur))
        self.peak_at[phase] = "(start)"

    def alloc(self, name: str, n: int, cat: str | None = None, cache: bool = False) -> str:
        if name in self.live:
            raise AssertionError(f"tape: {name} allocated twice")
        n, cat = self.size(n), cat or self.default
        self.live[name] = [n, cat]
        self.cur[cat] += n
        self.total += n
        self.trace.append((self.phase, self.total))
        if cache:
            self.cache.append(name)
        if self.total > self.peaks.get(self.phase, (-1,))[0]:
            self.peaks[self.phase] = (self.total, dict(self.cur))
            self.peak_at[self.phase] = name
        return name

    def free(self, *names: str) -> None:
        for nm in names:
            n, cat = self.live.pop(nm)
            self.cur[cat] -= n
            self.total -= n
            self.trace.append((self.phase, self.total))
            self.saved.discard(nm)

    def release(self, *names: str) -> None:
        """Python drops its reference: the tensor dies unless autograd saved it."""
        for nm in names:
            if nm in self.live and nm not in self.saved:
                self.free(nm)

    def recat(self, name: str, cat: str) -> None:
        n, old = self.live[name]
        self.cur[old] -= n
        self.cur[cat] += n
        self.live[name][1] = cat

    def exit_autocast(self) -> None:
        cached, self.cache = self.cache, []
        self.release(*cached)

    def bytes_of(self, cat: str) -> int:
        return self.cur[cat]


class ReplayStep:
    """Emits the events of one training step of ReferenceGPT onto a ReplayTape (see module docstring)."""

    def __init__(self, spec: ModelSpec, st: EagerSetup, tape: ReplayTape):
        self.spec, self.st, self.tp = spec, st, tape
        self.bf = st.precision == "bf16-mixed"
        self.e = 2 if self.bf else 4  # bytes of an autocast-region activation
        self.sm32 = self.bf and st.device == "cuda"  # CUDA autocast runs softmax in fp32
        self.T = st.micro_batch * st.seq_len
        self.sc = st.micro_batch * spec.n_heads * st.seq_len**2  # attention scores, elements
        self.h, self.f, self.q = spec.hidden, spec.ffn_hidden, spec.q_dim
        # matmul reshapes (b, a, s, d) head views to (b*a, s, d): a view only if b or a is 1,
        # otherwise a copy; likewise (b, a, s, d) -> (b, s, a*d) after attention needs a or s = 1
        self.qkv_view = st.micro_batch == 1 or spec.n_heads == 1
        self.y_view = spec.n_heads == 1 or st.seq_len == 1
        self.recomputed = False  # inside the backward of a checkpointed (recomputed) layer

    # ---- forward ----
    def linear(self, P, name, x, x_fp32, n_in, n_out, save, bias=True, stop=False):
        """nn.Linear (addmm): saves its input (autocast: a bf16 copy) and, under autocast, the bf16
        weight copy. Returns the output name (None if a checkpoint recompute stops before it)."""
        tp, T = self.tp, self.T
        saved_in = x
        if self.bf:
            if bias:
                tp.alloc(f"{P}{name}.bcast", n_out * 2, cache=True)
            tp.alloc(f"{P}{name}.wcast", n_in * n_out * 2, cache=True)
            if x_fp32:
                saved_in = tp.alloc(f"{P}{name}.in16", T * n_in * 2)
        if save:
            tp.saved.add(saved_in)
            if self.bf:
                tp.saved.add(f"{P}{name}.wcast")
        if stop:  # non-reentrant checkpoint stops once the last saved tensor is recomputed
            return None
        out = tp.alloc(f"{P}{name}.out", T * n_out * self.e)
        if saved_in != x:
            tp.release(saved_in)
        return out

    def layernorm(self, P, name, x, save):
        tp, T = self.tp, self.T
        out = tp.alloc(f"{P}{name}.out", T * self.h * 4)
        tp.alloc(f"{P}{name}.mean", T * 4)
        tp.alloc(f"{P}{name}.rstd", T * 4)
        if save:
            tp.saved.update((x, f"{P}{name}.mean", f"{P}{name}.rstd"))
        tp.release(f"{P}{name}.mean", f"{P}{name}.rstd")
        return out

    def layer_forward(self, i, x, save, recompute=False):
        """One block; `save=False` is the checkpointed forward (nothing saved, all freed at last use)."""
        tp, T, e, h, f, q = self.tp, self.T, self.e, self.h, self.f, self.q
        P = f"L{i}."
        sv = tp.saved.update if save else (lambda names: None)
        ln1 = self.layernorm(P, "ln1", x, save)
        qkv = self.linear(P, "qkv", ln1, True, h, 3 * q, save)
        if not self.qkv_view:  # reshape of a non-contiguous view for bmm: a copy
            tp.alloc(P + "q", T * q * e)
            tp.alloc(P + "k", T * q * e)
        tp.alloc(P + "scores", self.sc * e)
        if self.qkv_view:  # bmm saves views of the QKV output, which therefore stays alive
            sv((qkv,))
        else:
            sv((P + "q", P + "k"))
            tp.release(P + "q", P + "k")
        tp.alloc(P + "scaled", self.sc * e)
        tp.release(P + "scores")
        tp.alloc(P + "masked", self.sc * e)
        tp.release(P + "scaled")
        if self.sm32:
            tp.alloc(P + "masked32", self.sc * 4)
            tp.alloc(P + "probs", self.sc * 4)
            tp.release(P + "masked32", P + "masked")
            tp.alloc(P + "probs16", self.sc * 2)
            sv((P + "probs", P + "probs16"))
        else:
            tp.alloc(P + "probs", self.sc * e)
            sv((P + "probs",))
            tp.release(P + "masked")
        if not self.qkv_view:
            tp.alloc(P + "v", T * q * e)
        tp.alloc(P + "ctx", T * q * e)
        if not self.qkv_view:
            sv((P + "v",))
            tp.release(P + "v")
        tp.release(P + "probs16")
        y = P + "ctx"
        if not self.y_view:  # (b, a, s, d) -> (b, s, a*d) needs a copy
            y = tp.alloc(P + "y", T * q * e)
            tp.release(P + "ctx")
        proj = self.linear(P, "proj", y, not self.bf, q, h, save)
        tp.release(qkv, ln1, P + "probs", y)  # attention returns
        xmid = tp.alloc(P + "xmid", T * h * 4)  # fp32 residual (bf16 + fp32 promotes)
        tp.release(proj)
        ln2 = self.layernorm(P, "ln2", xmid, save)
        h1 = self.linear(P, "fc1", ln2, True, h, f, save)
        tp.alloc(P + "g", T * f * e)
        sv((h1,))
        tp.release(h1)
        out = self.linear(P, "fc2", P + "g", not self.bf, f, h, save, stop=recompute)
        tp.release(P + "g")
        if recompute:  # StopRecomputation unwinds the frames; the recompute's autocast exits
            tp.release(ln2)
            tp.exit_autocast()
            return None
        tp.release(ln2)  # mlp returns
        xout = tp.alloc(f"L{i + 1}.x", T * h * 4)
        tp.release(out, xmid)
        return xout

    def forward(self):
        tp, T, h, s = self.tp, self.T, self.h, self.st.seq_len
        tp.begin("forward", "Activation")
        tp.alloc("pos", s * 8)
        tp.alloc("tok_emb", T * h * 4)
        tp.alloc("pos_emb", s * h * 4)
        x = tp.alloc("L0.x", T * h * 4)
        tp.saved.add("pos")
        tp.release("tok_emb", "pos_emb")
        ckpt = self.st.recompute == "full"
        for i in range(self.spec.n_layers):
            tp.saved.add(x)  # saved by ln1, or by the checkpoint
            x = self.layer_forward(i, x, save=not ckpt)
        lnf = self.layernorm("F.", "lnf", x, True)
        logits = self.linear("F.", "head", lnf, True, h, self.spec.vocab, True, bias=False)
        tp.release(lnf)
        V = self.spec.vocab
        if self.bf:
            tp.alloc("F.logits32", T * V * 4)
        tp.alloc("F.lsm", T * V * 4)
        tp.alloc("F.loss", 4)
        tp.alloc("F.total_weight", 4)
        tp.saved.update(("F.lsm", "F.total_weight"))
        tp.release("F.logits32", logits)
        tp.exit_autocast()

    # ---- backward ----
    def linear_bw(
        self, P, name, n_in, n_out, gout, gout_dies, saved_in, in_cast, bias=True, grad_cat="Gradient"
    ):
        tp, T, e = self.tp, self.T, self.e
        gin = tp.alloc(f"{P}{name}.gin", T * n_in * e)
        gw = tp.alloc(f"{P}{name}.gW", n_in * n_out * e)
        saved = (saved_in, f"{P}{name}.wcast") if self.bf else (saved_in,)
        if self.recomputed:  # a recomputed tensor dies when unpacked, before the bias grad exists
            tp.free(*saved)
        gb = tp.alloc(f"{P}{name}.gb", n_out * e) if bias else None
        if gout_dies:
            tp.free(gout)
        if not self.recomputed:
            tp.free(*saved)
        if self.bf:
            if in_cast:  # the input was a bf16 copy of an fp32 tensor: its grad is cast back
                gin = self._cast(gin, T * n_in * 4)
            gw = self._cast(gw, n_in * n_out * 4)
            gb = self._cast(gb, n_out * 4) if bias else None
        tp.recat(gw, grad_cat)
        if bias:
            assert gb is not None  # allocated above when bias
            tp.recat(gb, "Gradient")
        return gin

    def _cast(self, name, n):
        new = self.tp.alloc(name + "32", n)
        self.tp.free(name)
        return new

    def layernorm_bw(self, P, name, gout, x):
        tp = self.tp
        g = tp.alloc(f"{P}{name}.gin", self.T * self.h * 4)
        tp.alloc(f"{P}{name}.gw", self.h * 4, "Gradient")
        tp.alloc(f"{P}{name}.gb", self.h * 4, "Gradient")
        tp.free(gout, x, f"{P}{name}.mean", f"{P}{name}.rstd")
        return g

    def layer_backward(self, i, gx):
        tp, T, e, h, f, q, sc = self.tp, self.T, self.e, self.h, self.f, self.q, self.sc
        P = f"L{i}."
        # residual x_out = xmid + fc2(...): the same gradient flows to both; bf16 branch gets a copy
        g2 = tp.alloc(P + "gfc2_16", T * h * 2) if self.bf else gx
        if self.st.recompute == "full":
            tp.default = "Activation"  # MemTracker counts a recompute as activations
            self.layer_forward(i, P + "x", save=True, recompute=True)
            tp.default, self.recomputed = "Temp", True
        gin = self.linear_bw(P, "fc2", f, h, g2, self.bf, P + "g", False)
        gg = tp.alloc(P + "ggelu", T * f * e)
        tp.free(gin, P + "fc1.out")
        gin = self.linear_bw(P, "fc1", h, f, gg, True, P + ("fc1.in16" if self.bf else "ln2.out"), True)
        gln = self.layernorm_bw(P, "ln2", gin, P + "xmid")
        gxm = tp.alloc(P + "gxmid", T * h * 4)
        tp.free(gln, gx)
        g2 = tp.alloc(P + "gproj16", T * h * 2) if self.bf else gxm
        gin = self.linear_bw(P, "proj", q, h, g2, self.bf, P + ("ctx" if self.y_view else "y"), False)
        gy = gin
        if not self.qkv_view:  # transpose/reshape backward makes it contiguous
            gy = tp.alloc(P + "gy", T * q * e)
            tp.free(gin)
        gv = tp.alloc(P + "gv", T * q * e)
        gatt = tp.alloc(P + "gatt", sc * e)
        tp.free(gy)
        if not self.qkv_view:
            tp.free(P + "v")
        if self.sm32:
            tp.free(P + "probs16")
            gatt = self._cast(gatt, sc * 4)
        gsm = tp.alloc(P + "gsoftmax", sc * (4 if self.sm32 else e))
        tp.free(gatt, P + "probs")
        if self.sm32:
            gsm = self._cast(gsm, sc * 2)  # grad of the fp32 cast of the bf16 scores (bf16)
        gmf = tp.alloc(P + "gmasked", sc * e)
        tp.free(gsm)
        gsc = tp.alloc(P + "gscores", sc * e)
        tp.free(gmf)
        tp.alloc(P + "gq", T * q * e)
        tp.alloc(P + "gk", T * q * e)
        tp.free(gsc)
        tp.free(*((P + "qkv.out",) if self.qkv_view else (P + "q", P + "k")))
        tp.alloc(P + "gstack", T * 3 * q * e)  # unbind backward stacks q, k, v grads
        tp.free(P + "gq", P + "gk", gv)
        tp.alloc(P + "gqkv", T * 3 * q * e)  # permute backward makes it contiguous
        tp.free(P + "gstack")
        gin = self.linear_bw(
            P, "qkv", h, 3 * q, P + "gqkv", True, P + ("qkv.in16" if self.bf else "ln1.out"), True
        )
        self.recomputed = False
        gln = self.layernorm_bw(P, "ln1", gin, P + "x")
        gxin = tp.alloc(P + "gxin", T * h * 4)
        tp.free(gln, gxm)
        return gxin

    def backward(self):
        tp, T, h, V = self.tp, self.T, self.h, self.spec.vocab
        tied = self.spec.tied_embeddings
        tp.begin("backward", "Temp")
        g = tp.alloc("B.glsm", T * V * 4)  # nll_loss backward
        g2 = tp.alloc("B.glogits", T * V * 4)  # log_softmax backward
        tp.free(g, "F.lsm")
        if self.bf:
            g2 = self._cast(g2, T * V * 2)
        gin = self.linear_bw(
            "F.",
            "head",
            h,
            V,
            g2,
            True,
            "F." + ("head.in16" if self.bf else "lnf.out"),
            True,
            bias=False,
            grad_cat="Temp" if tied else "Gradient",
        )
        gx = self.layernorm_bw("F.", "lnf", gin, f"L{self.spec.n_layers}.x")
        for i in reversed(range(self.spec.n_layers)):
            gx = self.layer_backward(i, gx)
        s, ms = self.st.seq_len, self.spec.max_seq
        tp.alloc("B.gpos_sum", s * h * 4)  # broadcast add backward: sum over the batch
        tp.alloc("B.gwpe", ms * h * 4, "Gradient")
        tp.free("B.gpos_sum", "pos")
        gwte = tp.alloc("B.gwte", V * h * 4)
        tp.free(gx)
        if tied:  # two gradients for one tensor: summed out of place before AccumulateGrad
            tp.alloc("B.gwte_sum", V * h * 4)
            tp.free(gwte, "F.head.gW32" if self.bf else "F.head.gW")
            gwte = "B.gwte_sum"
        tp.recat(gwte, "Gradient")
        tp.free("F.total_weight")

    # ---- optimizer ----
    def optimizer(self, first_step: bool):
        tp, st, cuda = self.tp, self.st, self.st.device == "cuda"
        tp.begin("optimizer", "Optstate")
        shapes = param_shapes(self.spec)
        if st.optimizer == "sgd":
            return
        if st.optimizer == "sgd-momentum":
            if first_step:  # momentum_buffer = grad.clone()
                for name, n in shapes:
                    tp.alloc(f"S.{name}.momentum", n * 4)
            return
        if first_step:  # AdamW _init_group: step (fp32 scalar, on CPU), exp_avg, exp_avg_sq
            for name, n in shapes:
                if not cuda:
                    tp.alloc(f"S.{name}.step", 4)
                tp.alloc(f"S.{name}.exp_avg", n * 4)
                tp.alloc(f"S.{name}.exp_avg_sq", n * 4)
        if cuda:  # foreach: sqrt(v) for every tensor at once, then in-place ops
            for name, n in shapes:
                tp.alloc(f"O.{name}.denom", n * 4)
            tp.free(*(f"O.{name}.denom" for name, _ in shapes))
            return
        prev: str | None = None  # single-tensor loop: denom = (v.sqrt() / c).add_(eps) per tensor
        for name, n in shapes:
            tp.alloc(f"O.{name}.sqrt", n * 4)
            tp.alloc(f"O.{name}.denom", n * 4)
            tp.free(f"O.{name}.sqrt")
            if prev:
                tp.free(prev)
            prev = f"O.{name}.denom"
        assert prev is not None  # shapes holds every parameter: never empty
        tp.free(prev)

    def zero_grad(self):
        for name in [k for k, (_, c) in self.tp.live.items() if c == "Gradient"]:
            self.tp.free(name)
