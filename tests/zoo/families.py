"""Models of the zoo's families that are not in the zoo: other timm networks
(squeeze-excite ResNeXts, RegNets, TF-padded EfficientNet V1 and V2, MobileNetV2/V4,
ConvNeXt V2, DeiT, BEiT, Swin, LeViT, GhostNet, MLP-Mixer, PoolFormer, DenseNet),
other transformers encoders and decoders (DistilBERT, RoBERTa, ALBERT, DeBERTa-v2,
GPT-Neo, OPT, BLOOM, Mistral, Qwen2, Gemma, Phi, Phi-3, GPT-NeoX, Falcon, mT5, CLIP,
ViT, Swin, ConvNeXt, ResNet, SegFormer, Depth Anything, wav2vec 2.0), a cross-attention diffusers
UNet, SD3's, Flux's and Wan's (video) transformers and an autoencoder's decoder. Each is built small from its library's code with random weights, so the
tests show that coverage follows the families, not the zoo's own members."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import torch
from torch import nn

from dnnc.models import zoo
from tests.zoo.cases import available

Example = tuple[nn.Module, tuple[torch.Tensor, ...]]


@dataclass(frozen=True)
class FamilyCase:
    name: str
    library: str
    build: Callable[[], Example]
    slow: bool = False
    gpu_dtype: torch.dtype = torch.float16
    """What the GPU test runs it in: float16, unless the model's own code keeps float16
    from exporting (see the case)."""


def _timm(name: str, size: int = 64, **kwargs: Any) -> Callable[[], Example]:
    def build() -> Example:
        from tests.zoo.torchvision_standin import import_timm

        import_timm()
        return zoo.timm_model(name, batch=2, size=size, **kwargs)

    return build


TEXT = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=128, vocab_size=1000)
DECODER = dict(TEXT, use_cache=False)
IMAGE = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=128, image_size=64, patch_size=16)
STAGES = dict(hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1])


def _hf(config: str, model: str, field: str, inputs: str = "tokens", seq: int = 16, **config_args: Any) -> Callable[[], Example]:
    return lambda: zoo.hf_model(config, model, 2, seq, field, inputs=inputs, **config_args)


def mixtral_as_built() -> Example:
    """A small Mixtral with transformers' default experts form: a grouped matmul over
    data-dependent token counts, which dnnc refuses with advice (``problems.WORKAROUNDS``)."""
    return zoo.hf_model(
        "MixtralConfig",
        "MixtralForCausalLM",
        2,
        16,
        "logits",
        num_key_value_heads=2,
        num_local_experts=4,
        num_experts_per_tok=2,
        **DECODER,
    )


def _mixtral() -> Example:
    """The same Mixtral with its experts in transformers' batched form, which compiles."""
    model, inputs = mixtral_as_built()
    model.model.set_experts_implementation("batched_mm")
    return model, inputs


def _unet_condition() -> Example:
    return zoo.unet2d_condition(batch=2, size=16, channels=(32, 64), groups=8, context=8, context_dim=32)


FAMILIES = [
    FamilyCase("seresnext26d_32x4d", "timm", _timm("seresnext26d_32x4d")),
    FamilyCase("regnety_002", "timm", _timm("regnety_002")),
    FamilyCase("tf_efficientnet_b0", "timm", _timm("tf_efficientnet_b0")),
    FamilyCase("tf_efficientnetv2_b0", "timm", _timm("tf_efficientnetv2_b0")),
    FamilyCase("mobilenetv2_100", "timm", _timm("mobilenetv2_100")),
    FamilyCase("mobilenetv4_conv_small", "timm", _timm("mobilenetv4_conv_small")),
    FamilyCase("convnextv2_atto", "timm", _timm("convnextv2_atto")),
    FamilyCase("deit3_small_patch16_224", "timm", _timm("deit3_small_patch16_224", img_size=64)),
    FamilyCase("beit_base_patch16_224", "timm", _timm("beit_base_patch16_224", img_size=64)),
    FamilyCase("swin_tiny_patch4_window7_224", "timm", _timm("swin_tiny_patch4_window7_224", size=112, img_size=112)),
    FamilyCase("levit_128s", "timm", _timm("levit_128s", img_size=64)),
    FamilyCase("ghostnet_100", "timm", _timm("ghostnet_100")),
    FamilyCase("mobilevit_xxs", "timm", _timm("mobilevit_xxs")),
    FamilyCase("efficientvit_b0", "timm", _timm("efficientvit_b0")),
    FamilyCase("fastvit_t8", "timm", _timm("fastvit_t8")),
    FamilyCase("inception_v3", "timm", _timm("inception_v3", size=96)),
    FamilyCase("maxvit_nano_rw_256", "timm", _timm("maxvit_nano_rw_256", size=128, img_size=128)),
    FamilyCase("eva02_tiny_patch14_224", "timm", _timm("eva02_tiny_patch14_224", size=112, img_size=112)),
    # Mixer's classifier starts at zero; its pooled features are what the blocks compute.
    FamilyCase("mixer_s32_224", "timm", _timm("mixer_s32_224", img_size=64, num_classes=0)),
    FamilyCase("poolformer_s12", "timm", _timm("poolformer_s12")),
    FamilyCase("densenet121", "timm", _timm("densenet121"), slow=True),
    FamilyCase(
        "distilbert",
        "transformers",
        _hf(
            "DistilBertConfig",
            "DistilBertModel",
            "last_hidden_state",
            n_layers=2,
            dim=64,
            n_heads=4,
            hidden_dim=128,
            vocab_size=1000,
        ),
    ),
    FamilyCase("roberta", "transformers", _hf("RobertaConfig", "RobertaModel", "last_hidden_state", **TEXT)),
    FamilyCase("albert", "transformers", _hf("AlbertConfig", "AlbertModel", "last_hidden_state", embedding_size=32, **TEXT)),
    FamilyCase("deberta_v2", "transformers", _hf("DebertaV2Config", "DebertaV2Model", "last_hidden_state", **TEXT)),
    FamilyCase(
        "gpt_neo",
        "transformers",
        _hf(
            "GPTNeoConfig",
            "GPTNeoForCausalLM",
            "logits",
            num_layers=2,
            hidden_size=64,
            num_heads=4,
            vocab_size=1000,
            attention_types=[[["global", "local"], 1]],
            window_size=8,
            use_cache=False,
        ),
    ),
    FamilyCase(
        "opt",
        "transformers",
        _hf(
            "OPTConfig",
            "OPTForCausalLM",
            "logits",
            ffn_dim=128,
            word_embed_proj_dim=64,
            **{k: v for k, v in DECODER.items() if k != "intermediate_size"},
        ),
    ),
    FamilyCase(
        "bloom",
        "transformers",
        _hf("BloomConfig", "BloomForCausalLM", "logits", n_layer=2, hidden_size=64, n_head=4, vocab_size=1000, use_cache=False),
    ),
    FamilyCase("mistral", "transformers", _hf("MistralConfig", "MistralForCausalLM", "logits", num_key_value_heads=2, **DECODER)),
    FamilyCase("qwen2", "transformers", _hf("Qwen2Config", "Qwen2ForCausalLM", "logits", num_key_value_heads=2, **DECODER)),
    FamilyCase(
        "gemma", "transformers", _hf("GemmaConfig", "GemmaForCausalLM", "logits", num_key_value_heads=2, head_dim=16, **DECODER)
    ),
    FamilyCase("phi", "transformers", _hf("PhiConfig", "PhiForCausalLM", "logits", **DECODER)),
    FamilyCase(
        "phi3", "transformers", _hf("Phi3Config", "Phi3ForCausalLM", "logits", num_key_value_heads=4, pad_token_id=0, **DECODER)
    ),
    FamilyCase("gpt_neox", "transformers", _hf("GPTNeoXConfig", "GPTNeoXForCausalLM", "logits", **DECODER)),
    FamilyCase(
        "falcon",
        "transformers",
        _hf(
            "FalconConfig",
            "FalconForCausalLM",
            "logits",
            num_hidden_layers=2,
            hidden_size=64,
            num_attention_heads=4,
            vocab_size=1000,
            use_cache=False,
        ),
    ),
    FamilyCase(
        "mt5_encoder",
        "transformers",
        _hf(
            "MT5Config",
            "MT5EncoderModel",
            "last_hidden_state",
            num_layers=2,
            d_model=64,
            d_kv=16,
            d_ff=128,
            num_heads=4,
            vocab_size=1000,
        ),
    ),
    FamilyCase("clip_text", "transformers", _hf("CLIPTextConfig", "CLIPTextModel", "last_hidden_state", **TEXT)),
    FamilyCase(
        "clip_vision", "transformers", _hf("CLIPVisionConfig", "CLIPVisionModel", "last_hidden_state", "image", 64, **IMAGE)
    ),
    FamilyCase("hf_vit", "transformers", _hf("ViTConfig", "ViTModel", "last_hidden_state", "image", 64, **IMAGE)),
    FamilyCase(
        "hf_swin",
        "transformers",
        _hf(
            "SwinConfig",
            "SwinModel",
            "last_hidden_state",
            "image",
            64,
            image_size=64,
            patch_size=4,
            embed_dim=32,
            depths=[1, 1],
            num_heads=[2, 4],
            window_size=4,
        ),
    ),
    FamilyCase("hf_convnext", "transformers", _hf("ConvNextConfig", "ConvNextModel", "last_hidden_state", "image", 64, **STAGES)),
    FamilyCase(
        "hf_resnet",
        "transformers",
        _hf("ResNetConfig", "ResNetModel", "last_hidden_state", "image", 64, embedding_size=16, **STAGES),
    ),
    FamilyCase(
        "segformer",
        "transformers",
        _hf(
            "SegformerConfig",
            "SegformerForSemanticSegmentation",
            "logits",
            "image",
            64,
            num_attention_heads=[1, 2, 2, 4],
            decoder_hidden_size=64,
            **STAGES,
        ),
    ),
    FamilyCase(
        "depth_anything",
        "transformers",
        _hf(
            "DepthAnythingConfig",
            "DepthAnythingForDepthEstimation",
            "predicted_depth",
            "image",
            64,
            backbone_config=dict(
                model_type="dinov2",
                hidden_size=32,
                num_hidden_layers=4,
                num_attention_heads=2,
                intermediate_size=64,
                image_size=64,
                patch_size=16,
                out_features=["stage1", "stage2", "stage3", "stage4"],
                reshape_hidden_states=False,
            ),
            patch_size=16,
            neck_hidden_sizes=[16, 32, 64, 64],
            fusion_hidden_size=32,
            reassemble_hidden_size=32,
            head_hidden_size=16,
        ),
    ),
    FamilyCase(
        "wav2vec2",
        "transformers",
        _hf(
            "Wav2Vec2Config",
            "Wav2Vec2Model",
            "last_hidden_state",
            "audio",
            4000,
            conv_dim=(32,) * 3,
            conv_stride=(5, 2, 2),
            conv_kernel=(10, 3, 3),
            num_feat_extract_layers=3,
            num_conv_pos_embeddings=16,
            num_conv_pos_embedding_groups=4,
            **TEXT,
        ),
    ),
    FamilyCase(
        "qwen3", "transformers", _hf("Qwen3Config", "Qwen3ForCausalLM", "logits", num_key_value_heads=2, head_dim=16, **DECODER)
    ),
    FamilyCase(
        "gptj",
        "transformers",
        _hf(
            "GPTJConfig",
            "GPTJForCausalLM",
            "logits",
            n_layer=2,
            n_embd=64,
            n_head=4,
            rotary_dim=8,
            vocab_size=1000,
            use_cache=False,
        ),
    ),
    FamilyCase("mixtral", "transformers", _mixtral),
    FamilyCase(
        "bart_encoder",
        "transformers",
        _hf(
            "BartConfig",
            "BartModel",
            "encoder_last_hidden_state",
            encoder_layers=1,
            decoder_layers=1,
            d_model=64,
            encoder_attention_heads=4,
            decoder_attention_heads=4,
            encoder_ffn_dim=128,
            decoder_ffn_dim=128,
            vocab_size=1000,
            use_cache=False,
        ),
        # BART's layers branch on a float16 tensor's values (an overflow clamp that runs
        # only in float16); export cannot trace that, and dnnc says so and advises bfloat16
        gpu_dtype=torch.bfloat16,
    ),
    FamilyCase(
        "dinov2",
        "transformers",
        _hf(
            "Dinov2Config",
            "Dinov2Model",
            "last_hidden_state",
            "image",
            64,
            num_hidden_layers=2,
            hidden_size=64,
            num_attention_heads=4,
            image_size=64,
            patch_size=16,
        ),
    ),
    FamilyCase("unet2d_condition", "diffusers", _unet_condition),
    FamilyCase("sd3_transformer", "diffusers", lambda: zoo.sd3_transformer(batch=2, size=16)),
    FamilyCase("flux_transformer", "diffusers", lambda: zoo.flux_transformer(batch=2, size=8)),
    FamilyCase("vae_decoder", "diffusers", lambda: zoo.vae_decoder(batch=2)),
    FamilyCase("wan_transformer", "diffusers", lambda: zoo.wan_transformer(batch=2, frames=3, size=8)),
]


def family_params() -> list[Any]:
    out = []
    for case in FAMILIES:
        marks = [pytest.mark.skipif(not available(case.library), reason=f"needs {case.library} (pip install 'dnnc[zoo]')")]
        if case.slow:
            marks.append(pytest.mark.slow)
        out.append(pytest.param(case, id=case.name, marks=marks))
    return out
