"""Models beyond the test families, compiled on the reference backend and checked.

Coverage must follow the families, not the models the tests name: this sweep builds
further timm and transformers models small (random weights, nothing downloaded),
compiles each with ``dnnc.compile(..., device="cpu")`` in its own process, and
compares the output with float64 eager: a model passes when dnnc's relative error
is within max(2 x eager float32's, 1e-4) (``degenerate`` where the random model's
output vanishes, so there is nothing to compare). One JSON line per model goes to ``--out``
(and stdout): the verdict, both errors, seconds, or the error dnnc gave.

    python bench/family_sweep.py --out bench/results/family-sweep-DATE-cpu.jsonl [--only a,b]
"""

from __future__ import annotations

import argparse
import functools
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TIMM = [
    *("resnet18", "resnet50d", "resnext26ts", "wide_resnet50_2", "regnetx_002", "efficientnet_b1", "mixnet_s"),
    *("mnasnet_100", "tinynet_e", "hardcorenas_a", "rexnet_100", "dla34", "dpn68", "hrnet_w18_small", "xception41"),
    *("res2net50_14w_8s", "resnest14d", "nf_resnet26", "eca_nfnet_l0", "cspresnet50", "cspdarknet53", "repvgg_a0"),
    *("mobileone_s0", "vgg11", "lcnet_050", "ghostnetv2_100", "hgnetv2_b0", "repghostnet_050", "fastvit_s12"),
    *("convmixer_768_32", "pvt_v2_b0", "edgenext_xx_small", "inception_next_tiny", "caformer_s18", "mambaout_femto"),
    *("starnet_s1", "rdnet_tiny", "repvit_m1"),
]
"""At 64x64."""

TIMM_AT_224 = [
    *("efficientformer_l1", "efficientformerv2_s0", "gcvit_xxtiny", "davit_tiny", "focalnet_tiny_srf"),
    *("coatnet_nano_rw_224", "mvitv2_tiny", "swinv2_cr_tiny_ns_224", "xcit_nano_12_p16_224", "pit_ti_224"),
    *("coat_lite_tiny", "twins_svt_small", "convit_tiny", "tnt_s_patch16_224", "volo_d1_224", "nest_tiny", "tiny_vit_5m_224"),
]
"""At their native 224x224 (their position tables or windows fix the size)."""

TIMM_RESIZED = ["vit_tiny_patch16_224", "deit_tiny_distilled_patch16_224", "cait_xxs24_224", "vit_small_patch16_rope_224"]
"""At 64x64 through ``img_size``."""

TIMM_FEATURES = ["resmlp_12_224", "gmlp_s16_224", "sequencer2d_s", "hiera_tiny_224"]
"""Their classifier starts at zero: the pooled features are compared (``num_classes=0``)."""

TEXT = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=128, vocab_size=1000)
DECODER = dict(TEXT, use_cache=False, pad_token_id=0)
GQA = dict(DECODER, num_key_value_heads=2)
IMAGE = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=128, image_size=64, patch_size=16)
STAGES = dict(hidden_sizes=[32, 64, 128, 256], depths=[1, 1, 1, 1])
CONV_AUDIO = dict(
    conv_dim=(32, 32), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4
)

HF: list[tuple[str, str, str, str, str, dict[str, Any]]] = [
    ("electra", "ElectraConfig", "ElectraModel", "last_hidden_state", "tokens", dict(TEXT, embedding_size=64)),
    ("mpnet", "MPNetConfig", "MPNetModel", "last_hidden_state", "tokens", TEXT),
    ("xlm_roberta", "XLMRobertaConfig", "XLMRobertaModel", "last_hidden_state", "tokens", TEXT),
    (
        "mobilebert",
        "MobileBertConfig",
        "MobileBertModel",
        "last_hidden_state",
        "tokens",
        dict(TEXT, embedding_size=32, intra_bottleneck_size=32, true_hidden_size=32, num_feedforward_networks=1),
    ),
    ("squeezebert", "SqueezeBertConfig", "SqueezeBertModel", "last_hidden_state", "tokens", dict(TEXT, embedding_size=64)),
    (
        "funnel",
        "FunnelConfig",
        "FunnelModel",
        "last_hidden_state",
        "tokens",
        dict(block_sizes=[1, 1], d_model=64, n_head=4, d_head=16, d_inner=128, vocab_size=1000),
    ),
    ("camembert", "CamembertConfig", "CamembertModel", "last_hidden_state", "tokens", TEXT),
    ("ernie", "ErnieConfig", "ErnieModel", "last_hidden_state", "tokens", TEXT),
    ("data2vec_text", "Data2VecTextConfig", "Data2VecTextModel", "last_hidden_state", "tokens", TEXT),
    (
        "modernbert",
        "ModernBertConfig",
        "ModernBertModel",
        "last_hidden_state",
        "tokens",
        dict(TEXT, global_attn_every_n_layers=2, local_attention=8, pad_token_id=0),
    ),
    ("olmo", "OlmoConfig", "OlmoForCausalLM", "logits", "tokens", DECODER),
    ("olmo2", "Olmo2Config", "Olmo2ForCausalLM", "logits", "tokens", DECODER),
    ("stablelm", "StableLmConfig", "StableLmForCausalLM", "logits", "tokens", dict(DECODER, num_key_value_heads=4)),
    ("starcoder2", "Starcoder2Config", "Starcoder2ForCausalLM", "logits", "tokens", GQA),
    ("gemma2", "Gemma2Config", "Gemma2ForCausalLM", "logits", "tokens", dict(GQA, head_dim=16)),
    ("gemma3_text", "Gemma3TextConfig", "Gemma3ForCausalLM", "logits", "tokens", dict(GQA, head_dim=16)),
    ("cohere", "CohereConfig", "CohereForCausalLM", "logits", "tokens", GQA),
    ("persimmon", "PersimmonConfig", "PersimmonForCausalLM", "logits", "tokens", DECODER),
    (
        "codegen",
        "CodeGenConfig",
        "CodeGenForCausalLM",
        "logits",
        "tokens",
        dict(n_layer=2, n_embd=64, n_head=4, rotary_dim=8, vocab_size=1000, use_cache=False, n_positions=64),
    ),
    ("biogpt", "BioGptConfig", "BioGptForCausalLM", "logits", "tokens", DECODER),
    ("granite", "GraniteConfig", "GraniteForCausalLM", "logits", "tokens", GQA),
    ("smollm3", "SmolLM3Config", "SmolLM3ForCausalLM", "logits", "tokens", GQA),
    ("glm", "GlmConfig", "GlmForCausalLM", "logits", "tokens", dict(GQA, head_dim=16)),
    ("helium", "HeliumConfig", "HeliumForCausalLM", "logits", "tokens", dict(GQA, head_dim=16)),
    (
        "mbart",
        "MBartConfig",
        "MBartModel",
        "last_hidden_state",
        "tokens",
        dict(
            encoder_layers=1,
            decoder_layers=1,
            d_model=64,
            encoder_attention_heads=4,
            decoder_attention_heads=4,
            encoder_ffn_dim=128,
            decoder_ffn_dim=128,
            vocab_size=1000,
        ),
    ),
    ("hubert", "HubertConfig", "HubertModel", "last_hidden_state", "audio", dict(TEXT, **CONV_AUDIO)),
    ("wavlm", "WavLMConfig", "WavLMModel", "last_hidden_state", "audio", dict(TEXT, **CONV_AUDIO)),
    ("hf_deit", "DeiTConfig", "DeiTModel", "last_hidden_state", "image", IMAGE),
    ("hf_beit", "BeitConfig", "BeitModel", "last_hidden_state", "image", IMAGE),
    ("hf_siglip_vision", "SiglipVisionConfig", "SiglipVisionModel", "last_hidden_state", "image", IMAGE),
    ("hf_dinov2_registers", "Dinov2WithRegistersConfig", "Dinov2WithRegistersModel", "last_hidden_state", "image", IMAGE),
    (
        "hf_swinv2",
        "Swinv2Config",
        "Swinv2Model",
        "last_hidden_state",
        "image",
        dict(image_size=64, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 2], window_size=4),
    ),
    ("hf_convnextv2", "ConvNextV2Config", "ConvNextV2Model", "pooler_output", "image", STAGES),
    ("hf_regnet", "RegNetConfig", "RegNetModel", "pooler_output", "image", dict(STAGES, groups_width=8, embedding_size=16)),
    (
        "hf_mobilenet_v2",
        "MobileNetV2Config",
        "MobileNetV2Model",
        "pooler_output",
        "image",
        dict(image_size=64, depth_multiplier=0.35),
    ),
    (
        "hf_mobilevit",
        "MobileViTConfig",
        "MobileViTModel",
        "pooler_output",
        "image",
        dict(image_size=64, hidden_sizes=[32, 48, 64], neck_hidden_sizes=[16, 16, 24, 24, 32, 32, 64]),
    ),
    ("hf_levit", "LevitConfig", "LevitModel", "last_hidden_state", "image", dict(image_size=64)),
    ("hf_poolformer", "PoolFormerConfig", "PoolFormerModel", "last_hidden_state", "image", STAGES),
    ("hf_bit", "BitConfig", "BitModel", "pooler_output", "image", dict(STAGES, embedding_size=32, num_groups=8)),
    (
        "hf_dpt",
        "DPTConfig",
        "DPTForSemanticSegmentation",
        "logits",
        "image",
        dict(
            IMAGE,
            num_hidden_layers=4,
            backbone_out_indices=[0, 1, 2, 3],
            neck_hidden_sizes=[16, 32, 64, 64],
            fusion_hidden_size=32,
            reassemble_factors=[4, 2, 1, 0.5],
            num_labels=5,
        ),
    ),
    (
        "hf_upernet_convnext",
        "UperNetConfig",
        "UperNetForSemanticSegmentation",
        "logits",
        "image",
        dict(
            backbone_config=dict(model_type="convnext", **STAGES, out_features=["stage1", "stage2", "stage3", "stage4"]),
            hidden_size=32,
            auxiliary_in_channels=128,
            num_labels=5,
        ),
    ),
    (
        "hf_pvt_v2",
        "PvtV2Config",
        "PvtV2Model",
        "last_hidden_state",
        "image",
        dict(hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1], num_attention_heads=[1, 1, 2, 4]),
    ),
]
"""(name, config class, model class, output field, inputs, config arguments)."""


def _called(model: Any, call: Callable[..., Any], *inputs: Any) -> tuple[Any, tuple[Any, ...]]:
    """``model`` as a module whose forward is ``call(model, *inputs)``, with those inputs."""
    import torch

    class Called(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model.eval()

        def forward(self, *xs: Any) -> Any:
            return call(self.model, *xs)

    return Called().eval(), inputs


def _sample(model: Any, *inputs: Any) -> Any:
    return model(*inputs).sample


def _decoded(vae: Any, latents: Any) -> Any:
    return vae.decode(latents).sample


def _diffusers_models() -> dict[str, Callable[[], tuple[Any, tuple[Any, ...]]]]:
    """diffusers models beyond the zoo's, small: name -> build (the module, called on its
    positional inputs, returns the compared tensor; weights seeded)."""
    import diffusers as d
    import torch

    from dnnc.models import zoo
    from dnnc.models._init import seeded

    vae = dict(block_out_channels=(32, 64), norm_num_groups=8, layers_per_block=1)
    vae |= dict(down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2)
    unet = dict(sample_size=16, block_out_channels=(32, 64), norm_num_groups=8, layers_per_block=1)
    t = torch.tensor([3])

    def build(name: str) -> tuple[Any, tuple[Any, ...]]:
        if name in ("sd3_transformer", "flux_transformer", "wan_transformer", "vae_decoder", "unet2d_condition"):
            return getattr(zoo, name)(batch=1)
        if name == "vae_encoder":
            return _called(d.AutoencoderKL(**vae), lambda m, x: m.encode(x).latent_dist.mean, torch.randn(1, 3, 32, 32))
        if name == "autoencoder_tiny":
            tiny = d.AutoencoderTiny(encoder_block_out_channels=(16,) * 4, decoder_block_out_channels=(16,) * 4)
            return _called(tiny, _decoded, torch.randn(1, 4, 8, 8))
        if name == "vq_model":
            vq = d.VQModel(**vae, latent_channels=3, num_vq_embeddings=64)
            return _called(vq, _sample, torch.randn(1, 3, 32, 32))
        if name == "dit":
            dit = d.DiTTransformer2DModel(
                num_attention_heads=2, attention_head_dim=16, in_channels=4, num_layers=2, sample_size=16, num_embeds_ada_norm=10
            )
            return _called(dit, lambda m, x, t, c: m(x, timestep=t, class_labels=c).sample, torch.randn(1, 4, 16, 16), t, t)
        if name == "pixart":
            pixart = d.PixArtTransformer2DModel(
                num_attention_heads=2,
                attention_head_dim=16,
                in_channels=4,
                out_channels=8,
                num_layers=2,
                sample_size=16,
                cross_attention_dim=32,
                caption_channels=24,
                norm_num_groups=8,
            )

            def pixart_call(m: Any, x: Any, e: Any, t: Any) -> Any:
                cond = {"resolution": None, "aspect_ratio": None}
                return m(x, encoder_hidden_states=e, timestep=t, added_cond_kwargs=cond).sample

            return _called(pixart, pixart_call, torch.randn(1, 4, 16, 16), torch.randn(1, 8, 24), t)
        if name == "unet2d_skip":
            skip = d.UNet2DModel(
                **unet,
                down_block_types=("SkipDownBlock2D", "AttnSkipDownBlock2D"),
                up_block_types=("AttnSkipUpBlock2D", "SkipUpBlock2D"),
                resnet_time_scale_shift="scale_shift",
            )
            return _called(skip, _sample, torch.randn(1, 3, 16, 16), t)
        if name == "unet_sdxl":
            sdxl = d.UNet2DConditionModel(
                **unet,
                down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
                cross_attention_dim=32,
                attention_head_dim=(2, 4),
                use_linear_projection=True,
                addition_embed_type="text_time",
                addition_time_embed_dim=8,
                projection_class_embeddings_input_dim=16 + 6 * 8,
                transformer_layers_per_block=(1, 2),
            )

            def sdxl_call(m: Any, x: Any, t: Any, e: Any, te: Any, ti: Any) -> Any:
                return m(x, t, encoder_hidden_states=e, added_cond_kwargs={"text_embeds": te, "time_ids": ti}).sample

            return _called(
                sdxl, sdxl_call, torch.randn(1, 4, 16, 16), t, torch.randn(1, 8, 32), torch.randn(1, 16), torch.randn(1, 6)
            )
        if name == "controlnet":
            net = d.ControlNetModel(
                **{k: v for k, v in unet.items() if k != "sample_size"},
                down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                cross_attention_dim=32,
                attention_head_dim=8,
                conditioning_embedding_out_channels=(16, 32),
            )
            zeroed = (net.controlnet_down_blocks, net.controlnet_mid_block, net.controlnet_cond_embedding.conv_out)
            for p in (p for module in zeroed for p in module.parameters()):  # zero at init: nothing to compare
                torch.nn.init.normal_(p, std=0.1)

            def controlnet_call(m: Any, x: Any, t: Any, e: Any, c: Any) -> Any:
                return m(x, t, encoder_hidden_states=e, controlnet_cond=c, return_dict=False)[1]  # the mid-block residual

            return _called(net, controlnet_call, torch.randn(1, 4, 16, 16), t, torch.randn(1, 8, 32), torch.randn(1, 3, 32, 32))
        return _video_and_more(d, name)

    def seeded_build(name: str) -> tuple[Any, tuple[Any, ...]]:
        with seeded(0):
            return build(name)

    return {name: functools.partial(seeded_build, name) for name in DIFFUSERS}


def _video_and_more(d: Any, name: str) -> tuple[Any, tuple[Any, ...]]:
    """The video models (3-D convolutions: Stable Video Diffusion's UNet and decoder, CogVideoX,
    LTX-Video, Wan's autoencoder) and other transformers (AuraFlow, Sana, Stable Audio)."""
    import torch

    t = torch.tensor([3])

    if name == "svd_unet":
        unet = d.UNetSpatioTemporalConditionModel(
            sample_size=8,
            in_channels=8,
            out_channels=4,
            down_block_types=("CrossAttnDownBlockSpatioTemporal", "DownBlockSpatioTemporal"),
            up_block_types=("UpBlockSpatioTemporal", "CrossAttnUpBlockSpatioTemporal"),
            block_out_channels=(32, 64),
            addition_time_embed_dim=8,
            projection_class_embeddings_input_dim=24,
            layers_per_block=1,
            cross_attention_dim=32,
            num_attention_heads=(2, 4),
        )
        return _called(unet, _sample, torch.randn(1, 2, 8, 8, 8), t, torch.randn(1, 1, 32), torch.randn(1, 3))
    if name == "svd_decoder":
        vae = d.AutoencoderKLTemporalDecoder(
            block_out_channels=(32, 64), down_block_types=("DownEncoderBlock2D",) * 2, latent_channels=4, layers_per_block=1
        )
        return _called(vae, lambda m, z: m.decode(z, num_frames=2).sample, torch.randn(2, 4, 8, 8))
    if name == "cogvideox":
        cog = d.CogVideoXTransformer3DModel(
            num_attention_heads=2,
            attention_head_dim=16,
            in_channels=4,
            out_channels=4,
            time_embed_dim=8,
            text_embed_dim=16,
            num_layers=1,
            sample_width=8,
            sample_height=8,
            sample_frames=5,
            temporal_compression_ratio=4,
            max_text_seq_length=8,
        )
        return _called(cog, _sample, torch.randn(1, 2, 4, 8, 8), torch.randn(1, 8, 16), t)
    if name == "cogvideox_decoder":
        vae = d.AutoencoderKLCogVideoX(
            block_out_channels=(16, 32),
            down_block_types=("CogVideoXDownBlock3D",) * 2,
            up_block_types=("CogVideoXUpBlock3D",) * 2,
            latent_channels=4,
            layers_per_block=1,
            norm_num_groups=8,
            temporal_compression_ratio=2,
        )
        return _called(vae, _decoded, torch.randn(1, 4, 2, 8, 8))
    if name == "ltx_video":
        ltx = d.LTXVideoTransformer3DModel(
            in_channels=8,
            out_channels=8,
            num_attention_heads=2,
            attention_head_dim=16,
            cross_attention_dim=32,
            num_layers=1,
            caption_channels=16,
        )

        def ltx_call(m: Any, x: Any, e: Any, t: Any, mask: Any) -> Any:
            return m(x, e, t, mask, num_frames=2, height=4, width=4).sample

        return _called(ltx, ltx_call, torch.randn(1, 32, 8), torch.randn(1, 8, 16), t, torch.ones(1, 8))
    if name == "ltx_video_decoder":
        vae = d.AutoencoderKLLTXVideo(
            block_out_channels=(16, 32),
            decoder_block_out_channels=(16, 32),
            layers_per_block=(1, 1, 1),
            decoder_layers_per_block=(1, 1, 1),
            spatio_temporal_scaling=(True, False),
            decoder_spatio_temporal_scaling=(True, False),
            decoder_inject_noise=(False, False, False),
            upsample_residual=(False, False),
            upsample_factor=(1, 1),
            latent_channels=4,
            patch_size=1,
            patch_size_t=1,
            down_block_types=("LTXVideoDownBlock3D",) * 2,
        )
        return _called(vae, _decoded, torch.randn(1, 4, 2, 8, 8))
    if name == "wan_decoder":
        vae = d.AutoencoderKLWan(base_dim=16, z_dim=4, dim_mult=[1, 2], num_res_blocks=1, temperal_downsample=[True])
        return _called(vae, _decoded, torch.randn(1, 4, 2, 8, 8))
    if name == "auraflow":
        aura = d.AuraFlowTransformer2DModel(
            sample_size=16,
            patch_size=2,
            in_channels=4,
            num_mmdit_layers=1,
            num_single_dit_layers=1,
            attention_head_dim=16,
            num_attention_heads=2,
            joint_attention_dim=32,
            caption_projection_dim=32,
            out_channels=4,
            pos_embed_max_size=64,
        )

        def aura_call(m: Any, x: Any, e: Any, t: Any) -> Any:
            return m(x, encoder_hidden_states=e, timestep=t).sample

        return _called(aura, aura_call, torch.randn(1, 4, 16, 16), torch.randn(1, 8, 32), t)
    if name == "sana":
        sana = d.SanaTransformer2DModel(
            in_channels=4,
            out_channels=4,
            num_attention_heads=2,
            attention_head_dim=16,
            num_layers=1,
            num_cross_attention_heads=2,
            cross_attention_head_dim=16,
            cross_attention_dim=32,
            caption_channels=16,
            sample_size=16,
            patch_size=1,
        )
        return _called(sana, _sample, torch.randn(1, 4, 16, 16), torch.randn(1, 8, 16), t)
    if name == "stable_audio":
        audio = d.StableAudioDiTModel(
            sample_size=16,
            in_channels=4,
            num_layers=1,
            attention_head_dim=16,
            num_attention_heads=2,
            num_key_value_attention_heads=1,
            out_channels=4,
            cross_attention_dim=32,
            time_proj_dim=16,
            global_states_input_dim=32,
            cross_attention_input_dim=24,
        )

        def audio_call(m: Any, x: Any, t: Any, e: Any, g: Any) -> Any:
            return m(x, t, e, g, return_dict=False)[0]

        return _called(audio, audio_call, torch.randn(1, 4, 16), t, torch.randn(1, 8, 24), torch.randn(1, 32))
    raise KeyError(name)


DIFFUSERS = [
    *("unet2d_condition", "unet_sdxl", "unet2d_skip", "controlnet", "sd3_transformer", "flux_transformer", "dit"),
    *("pixart", "vae_decoder", "vae_encoder", "autoencoder_tiny", "vq_model"),
    *("wan_transformer", "wan_decoder", "svd_unet", "svd_decoder", "cogvideox", "cogvideox_decoder", "ltx_video"),
    *("ltx_video_decoder", "auraflow", "sana", "stable_audio"),
]
"""diffusers models, small, at batch 1 (``_diffusers_models`` builds them)."""


def specs() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"name": m, "lib": "timm", "model": m, "size": 64} for m in TIMM]
    out += [{"name": m, "lib": "timm", "model": m, "size": 224} for m in TIMM_AT_224]
    out += [{"name": m, "lib": "timm", "model": m, "size": 64, "kw": {"img_size": 64}} for m in TIMM_RESIZED]
    size = {"sequencer2d_s": 64, "resmlp_12_224": 64, "gmlp_s16_224": 64}
    for m in TIMM_FEATURES:
        kw: dict[str, Any] = {"num_classes": 0, **({"img_size": 64} if m in size else {})}
        out.append({"name": m, "lib": "timm", "model": m, "size": size.get(m, 224), "kw": kw})
    for name, config, model, field, inputs, kw in HF:
        seq = {"tokens": 16, "image": 64, "audio": 1600}[inputs]
        out.append(
            {
                "name": name,
                "lib": "transformers",
                "config": config,
                "model": model,
                "field": field,
                "inputs": inputs,
                "seq": seq,
                "kw": kw,
            }
        )
    out += [{"name": m, "lib": "diffusers"} for m in DIFFUSERS]
    return out


def check_one(spec: dict[str, Any]) -> dict[str, Any]:
    """Build, compile and compare one model (in this process)."""
    import copy

    import torch

    import dnnc
    from dnnc.models import zoo

    if spec["lib"] == "diffusers":
        model, inputs = _diffusers_models()[spec["name"]]()
    elif spec["lib"] == "timm":
        from tests.zoo.torchvision_standin import import_timm

        import_timm()
        model, inputs = zoo.timm_model(spec["model"], batch=1, size=spec["size"], **spec.get("kw", {}))
    else:
        model, inputs = zoo.hf_model(
            spec["config"], spec["model"], 1, spec["seq"], spec["field"], inputs=spec["inputs"], **spec["kw"]
        )
    compiled = dnnc.compile(model, inputs, device="cpu")
    got = _first(compiled(*inputs), None)
    with torch.no_grad():
        eager = _first(model(*inputs), spec.get("field"))
        wide = copy.deepcopy(model).double()
        exact = _first(wide(*[x.double() if x.is_floating_point() else x for x in inputs]), spec.get("field"))

    def rel(a: torch.Tensor) -> float:
        return float((a.double() - exact).norm() / max(float(exact.norm()), 1e-30))

    err, eager_err = rel(got), rel(eager)
    bound = max(2 * eager_err, 1e-4)
    status = "ok" if err <= bound else "mismatch"
    if float(exact.norm()) < 1e-6:
        status = "degenerate"  # the random model's output vanishes: nothing to compare
    return {"status": status, "err": err, "eager_f32_err": eager_err, "norm": float(exact.norm())}


def _first(out: Any, field: str | None) -> Any:
    """The compared tensor: ``field`` of a model output, else its first tensor."""
    import torch

    if field is not None and hasattr(out, field):
        return getattr(out, field)
    if isinstance(out, torch.Tensor):
        return out
    if hasattr(out, "to_tuple"):
        out = out.to_tuple()
    if isinstance(out, dict):
        out = list(out.values())
    return _first(out[0], None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="JSON lines, one per model")
    parser.add_argument("--only", default="", help="comma-separated names")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per model")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a spec, run in this process
    args = parser.parse_args()
    if args.one:
        spec = json.loads(args.one)
        started = time.perf_counter()
        try:
            result = check_one(spec)
        except Exception as e:  # the verdict names what stopped the model
            lines = str(e).strip().splitlines()
            result = {"status": "error", "error": type(e).__name__, "message": " | ".join(lines[:4])[:600]}
        print(json.dumps({"name": spec["name"], **result, "seconds": round(time.perf_counter() - started, 1)}))
        return
    only = {n for n in args.only.split(",") if n}
    out = args.out.open("w") if args.out else None
    for spec in specs():
        if only and spec["name"] not in only:
            continue
        try:
            done = subprocess.run(
                [sys.executable, __file__, "--one", json.dumps(spec)],
                capture_output=True,
                text=True,
                timeout=args.timeout,
                cwd=ROOT,
            )
            lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
            line = lines[-1] if lines else json.dumps({"name": spec["name"], "status": "crash", "message": done.stderr[-600:]})
        except subprocess.TimeoutExpired:
            line = json.dumps({"name": spec["name"], "status": "timeout", "seconds": args.timeout})
        print(line, flush=True)
        if out is not None:
            out.write(line + "\n")
            out.flush()


if __name__ == "__main__":
    main()
