#!/usr/bin/env python3
"""Export the torch corpus: small torchvision and Hugging Face models, each with both exporters.

Every model is built from its library's own classes (torchvision's ResNet blocks, MobileNetV3,
EfficientNet, ConvNeXt, RegNet, DenseNet, ShuffleNetV2, MNASNet, DeepLabV3 with its ASPP head,
VisionTransformer; transformers' BertModel), shrunk through constructor arguments and block
settings so that each file stays well under 1 MB, with random seeded weights. Each is
exported twice:

  <model>_ts.onnx       the TorchScript exporter (dynamo=False), opset 17
  <model>_dynamo.onnx   the dynamo exporter (dynamo=True), opset 20, one self-contained file

All shapes are static except bert_dynamic (input_ids/attention_mask [batch, sequence]) and
resnet_dynbatch (input [batch, 3, 64, 64]). Each file is checked with onnx.checker (full
check) and run in onnxruntime (CPU), whose outputs must match torch's on a seeded input.

Needs torch, torchvision, transformers, onnx, onnxscript (the dynamo exporter) and
onnxruntime; none of them is a dependency of the project or of its CI, which only reads the
committed files. From the repository root:

  python tests/models/export_torch.py [--out tests/models/corpus] [--only NAME] [--readme]

--readme rewrites the file table of tests/models/README.md from the exported files.
"""

import argparse
import functools
import itertools
import re
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torchvision
import transformers
from torch import nn
from torchvision.models import (convnext, densenet, efficientnet, mnasnet, mobilenetv3, regnet, resnet,
                                shufflenetv2, vision_transformer)
from torchvision.models.segmentation import deeplabv3

HERE = Path(__file__).resolve().parent
TS_OPSET = 17
DYNAMO_OPSET = 20
SEED = 0
NUM_CLASSES = 10


# ---- models ---------------------------------------------------------------------------------------

class SmallResNet(resnet.ResNet):
    """torchvision's ResNet with its stage widths as an argument (torchvision fixes 64..512).

    The body is ResNet.__init__ with the widths replaced; blocks, _make_layer, downsample
    shortcuts and forward are torchvision's own.
    """

    def __init__(self, block, layers, widths, num_classes):
        nn.Module.__init__(self)
        self._norm_layer = nn.BatchNorm2d
        self.inplanes = widths[0]
        self.dilation = 1
        self.groups = 1
        self.base_width = 64
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, widths[0], layers[0])
        self.layer2 = self._make_layer(block, widths[1], layers[1], stride=2)
        self.layer3 = self._make_layer(block, widths[2], layers[2], stride=2)
        self.layer4 = self._make_layer(block, widths[3], layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(widths[3] * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")


def make_resnet():
    # ResNet-50's Bottleneck; layer1 has two blocks so that one residual is an identity shortcut.
    return SmallResNet(resnet.Bottleneck, [2, 1, 1, 1], [8, 16, 24, 32], NUM_CLASSES)


def make_mobilenet_v3():
    setting, last_channel = mobilenetv3._mobilenet_v3_conf("mobilenet_v3_small", width_mult=0.25)
    return mobilenetv3.MobileNetV3(setting, last_channel, num_classes=NUM_CLASSES)


def make_efficientnet():
    # B0's stages at a fifth of the width and half the depth: the stages of two blocks keep the
    # residual with StochasticDepth.
    setting, last_channel = efficientnet._efficientnet_conf("efficientnet_b0", width_mult=0.2, depth_mult=0.5)
    return efficientnet.EfficientNet(setting, dropout=0.2, stochastic_depth_prob=0.2,
                                     num_classes=NUM_CLASSES, last_channel=last_channel)


def make_convnext():
    cfg = convnext.CNBlockConfig
    setting = [cfg(16, 32, 1), cfg(32, 48, 2), cfg(48, 64, 1), cfg(64, None, 1)]
    return convnext.ConvNeXt(setting, stochastic_depth_prob=0.1, num_classes=NUM_CLASSES)


def make_regnet():
    # RegNetY: grouped 3x3 convs and squeeze-excitation, four stages.
    params = regnet.BlockParams.from_init_params(depth=5, w_0=8, w_a=8.0, w_m=2.0, group_width=8, se_ratio=0.25)
    return regnet.RegNet(params, num_classes=NUM_CLASSES, stem_width=8)


def make_densenet():
    return densenet.DenseNet(growth_rate=8, block_config=(2, 2, 2, 2), num_init_features=16, bn_size=2,
                             num_classes=NUM_CLASSES)


def make_shufflenet_v2():
    return shufflenetv2.ShuffleNetV2([2, 2, 2], [8, 16, 32, 64, 128], num_classes=NUM_CLASSES)


def make_mnasnet():
    return mnasnet.MNASNet(alpha=0.125, num_classes=NUM_CLASSES)


class DeepLabHeadSmall(nn.Sequential):
    """deeplabv3.DeepLabHead with ASPP's width as an argument (torchvision fixes 256)."""

    def __init__(self, in_channels, num_classes, width, atrous_rates=(12, 24, 36)):
        super().__init__(
            deeplabv3.ASPP(in_channels, atrous_rates, out_channels=width),
            nn.Conv2d(width, width, 3, padding=1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(),
            nn.Conv2d(width, num_classes, 1),
        )


class SegmentationOut(nn.Module):
    """DeepLabV3 returns a dict; the exporters want a tensor."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


def make_deeplabv3():
    # torchvision's deeplabv3_mobilenet_v3_large recipe: a dilated MobileNetV3-Large backbone
    # (output stride 16), ASPP head, bilinear upsampling to the input size.
    backbone = mobilenetv3.mobilenet_v3_large(weights=None, width_mult=0.125, dilated=True)
    model = deeplabv3._deeplabv3_mobilenetv3(backbone, num_classes=4, aux=False)
    in_channels = model.classifier[0].convs[0][0].in_channels
    model.classifier = DeepLabHeadSmall(in_channels, 4, width=16)
    return SegmentationOut(model)


def make_vit():
    return vision_transformer.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4,
                                                hidden_dim=32, mlp_dim=64, num_classes=NUM_CLASSES)


class Encoder(nn.Module):
    """BertModel called with keyword arguments, returning a plain tuple.

    The TorchScript tracer calls its module positionally, which transformers' forward
    decorators do not accept for BertModel; this wrapper gives both exporters a two-argument
    forward and fixes the outputs' order.
    """

    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, attention_mask):
        out = self.bert(input_ids=input_ids, attention_mask=attention_mask)
        return out.last_hidden_state, out.pooler_output


BERT_CONFIG = dict(vocab_size=256, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                   intermediate_size=256, max_position_embeddings=64)
# MiniLM-L6-H384's shape scaled down: six layers, a narrower hidden size than bert's, FFN 4x.
MINILM_CONFIG = dict(vocab_size=256, hidden_size=32, num_hidden_layers=6, num_attention_heads=2,
                     intermediate_size=128, max_position_embeddings=64)


def make_bert(config):
    return Encoder(transformers.BertModel(transformers.BertConfig(**config)))


# ---- inputs -----------------------------------------------------------------------------------

def image_input(size):
    def make(gen, batch=1):
        return {"input": torch.randn(batch, 3, size, size, generator=gen)}
    return make


def token_input(vocab):
    def make(gen, batch=1, seq=16):
        ids = torch.randint(0, vocab, (batch, seq), generator=gen, dtype=torch.int64)
        mask = torch.ones(batch, seq, dtype=torch.int64)
        mask[-1, seq * 3 // 4:] = 0  # the last row is padded, so the mask matters
        return {"input_ids": ids, "attention_mask": mask}
    return make


IMAGE_OUT = ["logits"]
BERT_OUT = ["last_hidden_state", "pooler_output"]


class Spec:
    """One corpus model: how to build it, its inputs, its output names, its symbolic dims."""

    def __init__(self, name, build, inputs, outputs, source, dynamic=None):
        self.name, self.build, self.inputs, self.outputs, self.source = name, build, inputs, outputs, source
        self.dynamic = dynamic or {}  # input name -> {axis: dim name}


SPECS = [
    Spec("resnet", make_resnet, image_input(64), IMAGE_OUT,
         "torchvision ResNet (Bottleneck, layers [2,1,1,1], widths 8/16/24/32)"),
    Spec("mobilenet_v3", make_mobilenet_v3, image_input(64), IMAGE_OUT,
         "torchvision MobileNetV3-Small, width_mult 0.25"),
    Spec("efficientnet", make_efficientnet, image_input(64), IMAGE_OUT,
         "torchvision EfficientNet-B0 settings, width_mult 0.2, depth_mult 0.5"),
    Spec("convnext", make_convnext, image_input(64), IMAGE_OUT,
         "torchvision ConvNeXt, stages 16/32/48/64 x 1/2/1/1 blocks"),
    Spec("regnet", make_regnet, image_input(64), IMAGE_OUT,
         "torchvision RegNetY (depth 5, w_0 8, w_a 8, w_m 2, group width 8, SE 0.25)"),
    Spec("densenet", make_densenet, image_input(64), IMAGE_OUT,
         "torchvision DenseNet (growth 8, blocks 2/2/2/2, 16 initial features)"),
    Spec("shufflenet_v2", make_shufflenet_v2, image_input(64), IMAGE_OUT,
         "torchvision ShuffleNetV2, repeats 2/2/2, channels 8/16/32/64/128"),
    Spec("mnasnet", make_mnasnet, image_input(64), IMAGE_OUT, "torchvision MNASNet, alpha 0.125"),
    Spec("deeplabv3", make_deeplabv3, image_input(64), ["out"],
         "torchvision DeepLabV3, MobileNetV3-Large backbone (width 0.125, dilated), ASPP width 16, 4 classes"),
    Spec("vit", make_vit, image_input(32), IMAGE_OUT,
         "torchvision VisionTransformer (32x32 image, patch 8, 2 layers, 4 heads, hidden 32, MLP 64)"),
    Spec("bert", functools.partial(make_bert, BERT_CONFIG), token_input(BERT_CONFIG["vocab_size"]), BERT_OUT,
         "transformers BertModel (2 layers, hidden 64, 4 heads, FFN 256, vocab 256)"),
    Spec("minilm", functools.partial(make_bert, MINILM_CONFIG), token_input(MINILM_CONFIG["vocab_size"]), BERT_OUT,
         "transformers BertModel, MiniLM-L6 shape (6 layers, hidden 32, 2 heads, FFN 128, vocab 256)"),
    Spec("bert_dynamic", functools.partial(make_bert, BERT_CONFIG), token_input(BERT_CONFIG["vocab_size"]), BERT_OUT,
         "the bert model above with symbolic batch and sequence",
         dynamic={"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"}}),
    Spec("resnet_dynbatch", make_resnet, image_input(64), IMAGE_OUT,
         "the resnet model above with a symbolic batch", dynamic={"input": {0: "batch"}}),
]


# ---- weights ------------------------------------------------------------------------------------

@torch.no_grad()
def randomize_(model, gen):
    """Gives random values to the tensors that libraries start at a constant which would make a
    layer an identity or an output constant.

    Libraries start BatchNorm at mean 0 / variance 1 / scale 1, LayerNorm at scale 1, the
    ConvNeXt layer scale at 1e-6 and the ViT head and class token at zero: exported as they are,
    a BatchNorm fold or a dropped residual branch could not change any output, and the ViT's
    logits would be its bias. Zero 1-D tensors (biases, norm shifts) stay zero, as the
    libraries make them: the TorchScript exporter then shares one initializer among the
    biases of equal shape, which a real export of a freshly built model has, and which a pass
    must handle (BatchNorm statistics are random, so folded biases are not zero).
    """
    for name, t in itertools.chain(model.named_parameters(), model.named_buffers()):
        if not t.is_floating_point() or t.numel() <= 1:
            continue
        if name.endswith("running_var"):
            t.copy_(torch.rand(t.shape, generator=gen) + 0.5)
        elif name.endswith("running_mean"):
            t.copy_(torch.randn(t.shape, generator=gen) * 0.1)
        elif bool(torch.all(t == t.reshape(-1)[0])):
            if float(t.reshape(-1)[0]) != 0.0:  # scales: norm weights, layer scales
                t.copy_(torch.rand(t.shape, generator=gen) + 0.5)
            elif t.dim() >= 2 or "token" in name:  # zero-initialized heads, class token
                t.copy_(torch.randn(t.shape, generator=gen) * 0.1)


# ---- export -------------------------------------------------------------------------------------

def export_ts(model, spec, example, path):
    args = tuple(example.values())
    dynamic_axes = {name: dict(axes) for name, axes in spec.dynamic.items()}
    if spec.dynamic:
        batch_only = all(set(axes.values()) == {"batch"} for axes in spec.dynamic.values())
        for out in spec.outputs:
            dynamic_axes[out] = {0: "batch"} if batch_only or out == "pooler_output" else {0: "batch", 1: "sequence"}
    torch.onnx.export(model, args, str(path), dynamo=False, opset_version=TS_OPSET,
                      input_names=list(example), output_names=spec.outputs,
                      dynamic_axes=dynamic_axes or None)


def export_dynamo(model, spec, example, path):
    dynamic_shapes = None
    if spec.dynamic:
        dims = {}
        dynamic_shapes = {}
        for name in example:
            axes = spec.dynamic.get(name, {})
            dynamic_shapes[name] = {axis: dims.setdefault(d, torch.export.Dim(d, min=1, max=64))
                                    for axis, d in axes.items()}
        forward_args = list(model.forward.__code__.co_varnames[1:1 + len(example)])
        dynamic_shapes = {arg: dynamic_shapes[name] for arg, name in zip(forward_args, example)}
    program = torch.onnx.export(model, tuple(example.values()), dynamo=True, opset_version=DYNAMO_OPSET,
                                input_names=list(example), output_names=spec.outputs,
                                dynamic_shapes=dynamic_shapes, external_data=False)
    program.save(str(path), external_data=False)
    # The corpus must be one file per model: fold any external data back in.
    model_proto = onnx.load(str(path), load_external_data=True)
    strip_local_paths(model_proto)
    onnx.save(model_proto, str(path), save_as_external_data=False)
    stray = path.with_name(path.name + ".data")
    if stray.exists():
        stray.unlink()


SOURCE_FILE = re.compile(r'File "([^"]+)"')


def strip_local_paths(model_proto):
    """Makes the files the dynamo exporter names in its per-node stack traces relative.

    The stack traces (metadata_props "pkg.torch.onnx.stack_trace") stay, as a real export has
    them, but name files as `torchvision/models/resnet.py` rather than by where this machine
    installed them.
    """
    def relative(match):
        path = match.group(1)
        for root in ("site-packages/", "dist-packages/"):
            if root in path:
                return f'File "{path.split(root, 1)[1]}"'
        return f'File "{Path(path).name}"'

    for node in model_proto.graph.node:
        for prop in node.metadata_props:
            prop.value = SOURCE_FILE.sub(relative, prop.value)


def validate(path, spec, model, gen_seed):
    """onnx.checker, then onnxruntime against torch on a seeded input (and a second shape if dynamic)."""
    onnx.checker.check_model(str(path), full_check=True)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    shapes = [{}]
    if spec.dynamic:
        shapes.append({"batch": 3, "seq": 12} if "bert" in spec.name else {"batch": 3})
    worst = 0.0
    for kwargs in shapes:
        gen = torch.Generator().manual_seed(gen_seed)
        example = spec.inputs(gen, **kwargs)
        with torch.no_grad():
            expected = model(*example.values())
        expected = expected if isinstance(expected, tuple) else (expected,)
        actual = sess.run(None, {k: v.numpy() for k, v in example.items()})
        for name, e, a in zip(spec.outputs, expected, actual):
            e = e.numpy()
            assert a.shape == e.shape, f"{path.name}: output {name} shape {a.shape}, torch {e.shape}"
            rel = float(np.max(np.abs(a - e)) / max(np.max(np.abs(e)), 1e-30))
            assert rel < 1e-4, f"{path.name}: output {name}: onnxruntime vs torch max rel diff {rel:.3g}"
            worst = max(worst, rel)
    return worst


def input_shapes(path):
    model = onnx.load(str(path), load_external_data=False)
    inits = {t.name for t in model.graph.initializer}
    parts = []
    for i in model.graph.input:
        if i.name in inits:
            continue
        t = i.type.tensor_type
        dims = [d.dim_param if d.HasField("dim_param") else str(d.dim_value) for d in t.shape.dim]
        parts.append(f"{i.name} {onnx.helper.tensor_dtype_to_np_dtype(t.elem_type).name}[{','.join(dims)}]")
    return "; ".join(parts)


def export_one(spec, out_dir):
    torch.manual_seed(SEED)
    model = spec.build()
    randomize_(model, torch.Generator().manual_seed(SEED + 1))
    # Eval mode: in training mode Dropout and StochasticDepth are exported as random ops
    # (Dropout/Bernoulli nodes) and BatchNorm as a batch-statistics update, not inference graphs.
    model.eval()
    if spec.dynamic:
        # Traced at batch 2 (and sequence 16): the exporters would specialize a size-1 dim.
        example = spec.inputs(torch.Generator().manual_seed(SEED), batch=2)
    else:
        example = spec.inputs(torch.Generator().manual_seed(SEED))
    rows = []
    for exporter, export, opset in (("ts", export_ts, TS_OPSET), ("dynamo", export_dynamo, DYNAMO_OPSET)):
        path = out_dir / f"{spec.name}_{exporter}.onnx"
        with torch.no_grad():
            export(model, spec, example, path)
        rel = validate(path, spec, model, gen_seed=SEED + 7)
        size = path.stat().st_size
        print(f"{path.name}: {size / 1024:.0f} KiB, opset {opset}, {input_shapes(path)}; "
              f"onnxruntime vs torch max rel diff {rel:.2g}")
        rows.append((path.name, spec.source, exporter, opset, input_shapes(path), size))
    return rows


def write_readme_table(rows):
    readme = HERE / "README.md"
    text = readme.read_text()
    begin, end = "<!-- corpus table: begin -->", "<!-- corpus table: end -->"
    lines = [begin, "", "| file | source | exporter | opset | inputs | size |", "|---|---|---|---|---|---|"]
    for name, source, exporter, opset, shapes, size in rows:
        exporter_text = "TorchScript (dynamo=False)" if exporter == "ts" else "dynamo (dynamo=True)"
        lines.append(f"| `{name}` | {source} | {exporter_text} | {opset} | {shapes} | {size / 1024:.0f} KiB |")
    total = sum(r[-1] for r in rows)
    lines += ["", f"{len(rows)} files, {total / 1024:.0f} KiB in all.", "", end]
    head, _, rest = text.partition(begin)
    _, _, tail = rest.partition(end)
    readme.write_text(head + "\n".join(lines) + tail)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE / "corpus", help="output folder")
    ap.add_argument("--only", help="export only the models whose name contains this")
    ap.add_argument("--readme", action="store_true", help="rewrite the table in tests/models/README.md")
    args = ap.parse_args()
    torch.set_num_threads(1)
    # nn.MultiheadAttention's inference fast path (ViT) calls aten::_native_multi_head_attention,
    # which the TorchScript exporter cannot translate; the regular path exports as MatMul/Softmax.
    torch.backends.mha.set_fastpath_enabled(False)
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, "
          f"transformers {transformers.__version__}, onnx {onnx.__version__}, onnxruntime {ort.__version__}")
    rows = []
    for spec in SPECS:
        if args.only and args.only not in spec.name:
            continue
        rows += export_one(spec, args.out)
    if args.readme:
        if args.only:
            sys.exit("--readme needs the whole corpus (no --only)")
        write_readme_table(rows)
    print(f"{len(rows)} files, {sum(r[-1] for r in rows) / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
