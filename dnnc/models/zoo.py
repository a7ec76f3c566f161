"""Models people deploy, built from the libraries' own code with random weights.

timm, Hugging Face transformers and diffusers build every model here from a config,
so nothing is downloaded; the libraries are imported only when a factory is called
(``pip install 'dnnc[zoo]'``). Each factory returns ``(model, example_inputs)`` like
those of ``dnnc.models``, with the model in eval mode and seeded weights, and the
model returns one tensor (logits, the last hidden state or the denoised sample), so
``dnnc compile dnnc.models.zoo:bert --arg seq=128`` works from the command line.

Sizes default to the real configurations (BERT-base, GPT-2 small, ...); the tests
pass smaller ones. ``timm_model`` and ``hf_model`` take any timm model name or
transformers config class, for models of the same families beyond this list.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from dnnc.models._init import calibrate_batchnorm, seeded

Example = tuple[nn.Module, tuple[torch.Tensor, ...]]


class FirstOutput(nn.Module):
    """A library model whose output is a structure (a ``ModelOutput``, a tuple),
    reduced to its main tensor: ``field`` if given, else the first one."""

    def __init__(self, model: nn.Module, field: str | None = None):
        super().__init__()
        self.model = model
        self.field = field

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        out = self.model(*args)
        if self.field is not None:
            return getattr(out, self.field)
        if isinstance(out, (tuple, list)):
            return out[0]
        if hasattr(out, "to_tuple"):
            return out.to_tuple()[0]
        return out


def _require(module: str, extra: str = "zoo") -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(f"the zoo model needs {module} ({e}); pip install 'dnnc[{extra}]'") from None


# timm -----------------------------------------------------------------------------------


def timm_model(name: str = "resnet50", batch: int = 1, size: int = 224, seed: int = 0, **kwargs: Any) -> Example:
    """Any timm model by name, random weights, BatchNorm statistics calibrated on
    random images (so a deep network keeps its activations in range in fp16)."""
    timm = _require("timm")
    with seeded(seed):
        model = timm.create_model(name, pretrained=False, **kwargs).eval()
        image = torch.randn(batch, 3, size, size)
        if any(isinstance(m, nn.BatchNorm2d) for m in model.modules()):
            calibrate_batchnorm(model, image)
    return model, (image,)


def resnet50(batch: int = 1, size: int = 224) -> Example:
    return timm_model("resnet50", batch, size)


def efficientnet_b0(batch: int = 1, size: int = 224) -> Example:
    return timm_model("efficientnet_b0", batch, size)


def mobilenetv3_large_100(batch: int = 1, size: int = 224) -> Example:
    return timm_model("mobilenetv3_large_100", batch, size)


def convnext_tiny(batch: int = 1, size: int = 224) -> Example:
    return timm_model("convnext_tiny", batch, size)


def vit_small_patch16_224(batch: int = 1, size: int = 224) -> Example:
    return timm_model("vit_small_patch16_224", batch, size, img_size=size)


# transformers ---------------------------------------------------------------------------


def hf_model(
    config: str = "BertConfig",
    model: str = "BertModel",
    batch: int = 1,
    seq: int = 128,
    field: str | None = None,
    seed: int = 0,
    inputs: str = "tokens",
    **config_args: Any,
) -> Example:
    """Any transformers model class built from its config class with these
    arguments. ``inputs`` says what it is run on: random token ids (``tokens``,
    ``batch x seq``), images (``image``, ``batch x 3 x seq x seq``) or raw audio
    (``audio``, ``batch x seq`` samples)."""
    transformers = _require("transformers")
    with seeded(seed):
        cfg = getattr(transformers, config)(**config_args)
        built = _model_class(transformers, model)(cfg).eval()
        if inputs == "tokens":
            example = torch.randint(0, cfg.vocab_size, (batch, seq))
        elif inputs == "image":
            example = torch.randn(batch, getattr(cfg, "num_channels", 3), seq, seq)
        elif inputs == "audio":
            example = torch.randn(batch, seq)
        else:
            raise ValueError(f"hf_model inputs={inputs!r}: expected tokens, image or audio")
    return FirstOutput(built, field).eval(), (example,)


def _model_class(transformers: Any, name: str) -> Callable[..., nn.Module]:
    found = getattr(transformers, name, None)
    if found is None:
        raise ValueError(f"transformers has no model class {name!r}")
    return found


def bert(batch: int = 1, seq: int = 128, layers: int = 12, hidden: int = 768, heads: int = 12, vocab: int = 30522) -> Example:
    """BERT-base (``BertModel``); returns the last hidden state."""
    return hf_model(
        "BertConfig",
        "BertModel",
        batch,
        seq,
        "last_hidden_state",
        num_hidden_layers=layers,
        hidden_size=hidden,
        num_attention_heads=heads,
        intermediate_size=4 * hidden,
        vocab_size=vocab,
    )


def gpt2(batch: int = 1, seq: int = 128, layers: int = 12, hidden: int = 768, heads: int = 12, vocab: int = 50257) -> Example:
    """GPT-2 small with its LM head (``GPT2LMHeadModel``, no KV cache); returns the logits."""
    return hf_model(
        "GPT2Config",
        "GPT2LMHeadModel",
        batch,
        seq,
        "logits",
        n_layer=layers,
        n_embd=hidden,
        n_head=heads,
        vocab_size=vocab,
        n_positions=max(1024, seq),
        use_cache=False,
    )


def llama(
    batch: int = 1,
    seq: int = 128,
    layers: int = 4,
    hidden: int = 512,
    heads: int = 8,
    kv_heads: int = 4,
    vocab: int = 32000,
) -> Example:
    """A small Llama (``LlamaForCausalLM``: RMSNorm, rotary embeddings, grouped-query
    attention, SwiGLU), no KV cache; returns the logits."""
    return hf_model(
        "LlamaConfig",
        "LlamaForCausalLM",
        batch,
        seq,
        "logits",
        num_hidden_layers=layers,
        hidden_size=hidden,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        intermediate_size=int(hidden * 8 / 3) // 64 * 64,
        vocab_size=vocab,
        max_position_embeddings=max(2048, seq),
        use_cache=False,
    )


def t5_encoder(batch: int = 1, seq: int = 128, layers: int = 6, hidden: int = 512, heads: int = 8, vocab: int = 32128) -> Example:
    """T5-small's encoder (``T5EncoderModel``: RMS layer norm, relative position
    buckets); returns the last hidden state."""
    return hf_model(
        "T5Config",
        "T5EncoderModel",
        batch,
        seq,
        "last_hidden_state",
        num_layers=layers,
        d_model=hidden,
        d_kv=hidden // heads,
        d_ff=4 * hidden,
        num_heads=heads,
        vocab_size=vocab,
    )


def whisper_encoder(
    batch: int = 1, frames: int = 3000, layers: int = 4, hidden: int = 384, heads: int = 6, mels: int = 80
) -> Example:
    """Whisper-tiny's audio encoder (``WhisperEncoder``: two 1-D convolutions, GELU,
    sinusoidal positions, pre-norm attention) on a log-mel spectrogram of ``frames``."""
    transformers = _require("transformers")
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    with seeded(0):
        cfg = transformers.WhisperConfig(
            d_model=hidden,
            encoder_layers=layers,
            encoder_attention_heads=heads,
            encoder_ffn_dim=4 * hidden,
            num_mel_bins=mels,
            max_source_positions=frames // 2,
        )
        model = WhisperEncoder(cfg).eval()
        features = torch.randn(batch, mels, frames)
    return FirstOutput(model, "last_hidden_state").eval(), (features,)


# diffusers ------------------------------------------------------------------------------


class _Denoiser(nn.Module):
    """A diffusers UNet called as ``unet(sample, timestep)``, or with the conditional
    UNet's text ``context`` as a third argument, returning the sample."""

    def __init__(self, unet: nn.Module):
        super().__init__()
        self.unet = unet

    def forward(self, sample: torch.Tensor, timestep: torch.Tensor, *context: torch.Tensor) -> torch.Tensor:
        return self.unet(sample, timestep, *context).sample


def unet2d(batch: int = 1, size: int = 64, channels: tuple[int, ...] = (64, 128, 128), groups: int = 32) -> Example:
    """A small DDPM-style ``UNet2DModel`` (ResNet blocks with GroupNorm and SiLU,
    self-attention at the lower resolutions, nearest-neighbour upsampling,
    sinusoidal timestep embedding)."""
    diffusers = _require("diffusers")
    levels = len(channels)
    with seeded(0):
        unet = diffusers.UNet2DModel(
            sample_size=size,
            in_channels=3,
            out_channels=3,
            layers_per_block=1,
            block_out_channels=tuple(channels),
            down_block_types=("DownBlock2D",) + ("AttnDownBlock2D",) * (levels - 1),
            up_block_types=("AttnUpBlock2D",) * (levels - 1) + ("UpBlock2D",),
            norm_num_groups=groups,
        ).eval()
        sample = torch.randn(batch, 3, size, size)
        timestep = torch.full((batch,), 10, dtype=torch.int64)
    return _Denoiser(unet).eval(), (sample, timestep)


def unet2d_condition(
    batch: int = 1,
    size: int = 64,
    channels: tuple[int, ...] = (320, 640, 1280),
    groups: int = 32,
    context: int = 77,
    context_dim: int = 768,
    heads: int = 8,
) -> Example:
    """A Stable-Diffusion-style ``UNet2DConditionModel`` on 4-channel latents:
    ResNet blocks, transformer blocks with self- and cross-attention to a text
    context (``batch x context x context_dim``), GEGLU feed-forward; ``heads``
    attention heads at every level (Stable Diffusion 1.x's layout)."""
    diffusers = _require("diffusers")
    levels = len(channels)
    with seeded(0):
        unet = diffusers.UNet2DConditionModel(
            sample_size=size,
            in_channels=4,
            out_channels=4,
            layers_per_block=1,
            block_out_channels=tuple(channels),
            down_block_types=("CrossAttnDownBlock2D",) * (levels - 1) + ("DownBlock2D",),
            up_block_types=("UpBlock2D",) + ("CrossAttnUpBlock2D",) * (levels - 1),
            cross_attention_dim=context_dim,
            norm_num_groups=groups,
            attention_head_dim=heads,
        ).eval()
        sample = torch.randn(batch, 4, size, size)
        timestep = torch.full((batch,), 10, dtype=torch.int64)
        text = torch.randn(batch, context, context_dim)
    return _Denoiser(unet).eval(), (sample, timestep, text)


class _Transformer(nn.Module):
    """A diffusers transformer (SD3's or Flux's) called with its keyword inputs in a fixed
    order, returning the sample."""

    def __init__(self, model: nn.Module, names: tuple[str, ...]):
        super().__init__()
        self.model = model
        self.names = names

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.model(**dict(zip(self.names, inputs, strict=True))).sample


def sd3_transformer(
    batch: int = 1, size: int = 32, layers: int = 2, heads: int = 4, head_dim: int = 32, context: int = 16, context_dim: int = 64
) -> Example:
    """A Stable-Diffusion-3-style ``SD3Transformer2DModel`` (MMDiT: joint attention over
    latent patches and text tokens, adaptive layer norms from the timestep and pooled
    text) on 16-channel latents of ``size`` x ``size``."""
    diffusers = _require("diffusers")
    with seeded(0):
        model = diffusers.SD3Transformer2DModel(
            sample_size=size,
            patch_size=2,
            in_channels=16,
            out_channels=16,
            num_layers=layers,
            attention_head_dim=head_dim,
            num_attention_heads=heads,
            joint_attention_dim=context_dim,
            caption_projection_dim=heads * head_dim,
            pooled_projection_dim=context_dim,
            pos_embed_max_size=size,
        ).eval()
        inputs = (
            torch.randn(batch, 16, size, size),
            torch.randn(batch, context, context_dim),
            torch.randn(batch, context_dim),
            torch.full((batch,), 500, dtype=torch.int64),
        )
    names = ("hidden_states", "encoder_hidden_states", "pooled_projections", "timestep")
    return _Transformer(model, names).eval(), inputs


def flux_transformer(
    batch: int = 1, size: int = 16, layers: int = 1, single_layers: int = 2, heads: int = 2, context: int = 8
) -> Example:
    """A Flux-style ``FluxTransformer2DModel``: double-stream blocks (image and text apart,
    attending jointly) then single-stream ones, rotary positions from the image and text
    ids, which diffusers computes in float64 (dnnc computes them in float32,
    ``knobs.float64``). The latent is ``size`` x ``size`` tokens of 16 channels, packed
    as the Flux pipeline packs it; the ids are the pipeline's (row and column of each
    latent token, zeros for text)."""
    diffusers = _require("diffusers")
    head_dim = 16
    with seeded(0):
        model = diffusers.FluxTransformer2DModel(
            patch_size=1,
            in_channels=16,
            num_layers=layers,
            num_single_layers=single_layers,
            attention_head_dim=head_dim,
            num_attention_heads=heads,
            joint_attention_dim=32,
            pooled_projection_dim=32,
            axes_dims_rope=(4, 6, 6),
        ).eval()
        rows, cols = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
        image_ids = torch.stack([torch.zeros_like(rows), rows, cols], dim=-1).reshape(-1, 3).float()
        inputs = (
            torch.randn(batch, size * size, 16),
            torch.randn(batch, context, 32),
            torch.randn(batch, 32),
            torch.full((batch,), 0.5),
            image_ids,
            torch.zeros(context, 3),
        )
    names = ("hidden_states", "encoder_hidden_states", "pooled_projections", "timestep", "img_ids", "txt_ids")
    return _Transformer(model, names).eval(), inputs


def wan_transformer(
    batch: int = 1, frames: int = 2, size: int = 16, layers: int = 2, heads: int = 2, head_dim: int = 32, context: int = 16
) -> Example:
    """A Wan-2.1-style ``WanTransformer3DModel`` (a video DiT: a 3-D patch embedding,
    3-D rotary positions, self-attention over every frame's patches, cross-attention to
    text) on 16-channel latents of ``frames`` x ``size`` x ``size``."""
    diffusers = _require("diffusers")
    with seeded(0):
        model = diffusers.WanTransformer3DModel(
            patch_size=(1, 2, 2),
            num_attention_heads=heads,
            attention_head_dim=head_dim,
            in_channels=16,
            out_channels=16,
            text_dim=64,
            freq_dim=64,
            ffn_dim=4 * heads * head_dim,
            num_layers=layers,
            rope_max_seq_len=64,
        ).eval()
        inputs = (
            torch.randn(batch, 16, frames, size, size),
            torch.full((batch,), 500, dtype=torch.int64),
            torch.randn(batch, context, 64),
        )
    return _Transformer(model, ("hidden_states", "timestep", "encoder_hidden_states")).eval(), inputs


class _Decoder(nn.Module):
    """A diffusers autoencoder's decoder: latents in, the image out."""

    def __init__(self, vae: nn.Module):
        super().__init__()
        self.vae = vae

    def forward(self, latents: torch.Tensor) -> torch.Tensor:
        return self.vae.decode(latents).sample


def vae_decoder(batch: int = 1, size: int = 16, channels: tuple[int, ...] = (32, 64), groups: int = 8) -> Example:
    """The decoder of a Stable-Diffusion-style ``AutoencoderKL`` (ResNet blocks with
    GroupNorm, a self-attention mid-block, nearest-neighbour upsampling) from 4-channel
    latents of ``size`` x ``size``."""
    diffusers = _require("diffusers")
    levels = len(channels)
    with seeded(0):
        vae = diffusers.AutoencoderKL(
            in_channels=3,
            out_channels=3,
            down_block_types=("DownEncoderBlock2D",) * levels,
            up_block_types=("UpDecoderBlock2D",) * levels,
            block_out_channels=tuple(channels),
            latent_channels=4,
            norm_num_groups=groups,
            layers_per_block=1,
        ).eval()
        latents = torch.randn(batch, 4, size, size)
    return _Decoder(vae).eval(), (latents,)


ZOO: dict[str, Callable[..., Example]] = {
    "timm_resnet50": resnet50,
    "efficientnet_b0": efficientnet_b0,
    "mobilenetv3_large_100": mobilenetv3_large_100,
    "convnext_tiny": convnext_tiny,
    "vit_small_patch16_224": vit_small_patch16_224,
    "bert": bert,
    "gpt2": gpt2,
    "llama": llama,
    "t5_encoder": t5_encoder,
    "whisper_encoder": whisper_encoder,
    "unet2d": unet2d,
}
"""The zoo by name: the models the tests and the benchmark suite run."""
