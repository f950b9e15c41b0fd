#!/usr/bin/env python3
"""Trains the small residual digits CNN and writes it, with its test set, to tests/data/digits.

The network sees scikit-learn's bundled 8x8 digits (1,797 images, no download). It is
trained in plain numpy (forward and backward written out below) because a CPU PyTorch wheel
could not be installed where this was written; the result is an ordinary ONNX model.

    x[N,1,8,8] -> Conv3x3(16)-BN-ReLU                          = a1
               -> Conv3x3(16)-BN-ReLU -> Conv3x3(16)-BN -> Add(a1) -> ReLU
               -> Conv3x3(32, stride 2)-BN-ReLU -> Flatten -> Gemm(10) = logits[N,10]

Everything is seeded, so rerunning gives the same files:

    python3 scripts/train_digits_cnn.py --out tests/data/digits

writes digits_cnn.onnx (opset 13, dynamic batch), x.pb (float32 [500,1,8,8], the held-out
test images), labels.pb (int64 [500]) and calib/input_K.pb (batches from the training
split), then prints the float test accuracy measured in onnxruntime when it is installed.
Needs numpy, onnx and scikit-learn.
"""

import argparse
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from sklearn.datasets import load_digits

SEED = 20240605
TEST_SIZE = 500
EPOCHS = 40
BATCH = 64
BN_EPS = 1e-5
BN_MOMENTUM = 0.1
CALIB_BATCHES = 4
CALIB_BATCH_SIZE = 32


# ---- layers: forward keeps what backward needs -------------------------------------------------

def windows(xp, stride, out_hw):
    """3x3 patches of the padded input as rows: [N*Ho*Wo, C*9]."""
    n, c = xp.shape[:2]
    v = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))[:, :, ::stride, ::stride]
    v = v[:, :, :out_hw, :out_hw]
    return v.transpose(0, 2, 3, 1, 4, 5).reshape(n * out_hw * out_hw, c * 9)


class Conv:
    """3x3 convolution, padding 1, no bias (the batch norm after it has one)."""

    def __init__(self, rng, cin, cout, stride=1):
        self.w = rng.standard_normal((cout, cin, 3, 3)) * np.sqrt(2.0 / (cin * 9))
        self.stride = stride
        self.params = [self.w]

    def forward(self, x):
        n, c, h, _ = x.shape
        self.out_hw = (h - 1) // self.stride + 1
        self.x_shape = x.shape
        self.cols = windows(np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))), self.stride, self.out_hw)
        y = self.cols @ self.w.reshape(self.w.shape[0], -1).T
        return y.reshape(n, self.out_hw, self.out_hw, -1).transpose(0, 3, 1, 2)

    def backward(self, dy):
        n, c, h, w = self.x_shape
        o, s = self.out_hw, self.stride
        dy_rows = dy.transpose(0, 2, 3, 1).reshape(n * o * o, -1)
        self.grads = [(dy_rows.T @ self.cols).reshape(self.w.shape)]
        dcols = (dy_rows @ self.w.reshape(self.w.shape[0], -1)).reshape(n, o, o, c, 3, 3)
        dxp = np.zeros((n, c, h + 2, w + 2))
        for i in range(3):
            for j in range(3):
                dxp[:, :, i:i + s * o:s, j:j + s * o:s] += dcols[:, :, :, :, i, j].transpose(0, 3, 1, 2)
        return dxp[:, :, 1:h + 1, 1:w + 1]


class BatchNorm:
    def __init__(self, channels):
        self.gamma, self.beta = np.ones(channels), np.zeros(channels)
        self.mean, self.var = np.zeros(channels), np.ones(channels)
        self.params = [self.gamma, self.beta]

    def forward(self, x, training):
        if training:
            mu, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
            self.mean = (1 - BN_MOMENTUM) * self.mean + BN_MOMENTUM * mu
            m = x.size / x.shape[1]
            self.var = (1 - BN_MOMENTUM) * self.var + BN_MOMENTUM * var * m / (m - 1)
        else:
            mu, var = self.mean, self.var
        self.inv = 1.0 / np.sqrt(var + BN_EPS)
        self.xhat = (x - mu[None, :, None, None]) * self.inv[None, :, None, None]
        return self.gamma[None, :, None, None] * self.xhat + self.beta[None, :, None, None]

    def backward(self, dy):
        axes = (0, 2, 3)
        m = dy.size / dy.shape[1]
        self.grads = [(dy * self.xhat).sum(axis=axes), dy.sum(axis=axes)]
        dxhat = dy * self.gamma[None, :, None, None]
        return (self.inv[None, :, None, None] / m) * (
            m * dxhat - dxhat.sum(axis=axes)[None, :, None, None]
            - self.xhat * (dxhat * self.xhat).sum(axis=axes)[None, :, None, None])


class Dense:
    def __init__(self, rng, fan_in, fan_out):
        self.w = rng.standard_normal((fan_out, fan_in)) * np.sqrt(1.0 / fan_in)
        self.b = np.zeros(fan_out)
        self.params = [self.w, self.b]

    def forward(self, x):
        self.x = x
        return x @ self.w.T + self.b

    def backward(self, dy):
        self.grads = [dy.T @ self.x, dy.sum(axis=0)]
        return dy @ self.w


class Net:
    def __init__(self, rng):
        self.conv1, self.bn1 = Conv(rng, 1, 16), BatchNorm(16)
        self.conv2, self.bn2 = Conv(rng, 16, 16), BatchNorm(16)
        self.conv3, self.bn3 = Conv(rng, 16, 16), BatchNorm(16)
        self.conv4, self.bn4 = Conv(rng, 16, 32, stride=2), BatchNorm(32)
        self.fc = Dense(rng, 32 * 4 * 4, 10)
        self.layers = [self.conv1, self.bn1, self.conv2, self.bn2, self.conv3, self.bn3, self.conv4, self.bn4, self.fc]

    def forward(self, x, training=False):
        a1 = np.maximum(self.bn1.forward(self.conv1.forward(x), training), 0)
        h = np.maximum(self.bn2.forward(self.conv2.forward(a1), training), 0)
        self.h_mask = h > 0
        s = self.bn3.forward(self.conv3.forward(h), training) + a1
        a2 = np.maximum(s, 0)
        a3 = np.maximum(self.bn4.forward(self.conv4.forward(a2), training), 0)
        self.masks = (a1 > 0, s > 0, a3 > 0)
        self.a3_shape = a3.shape
        return self.fc.forward(a3.reshape(len(x), -1))

    def backward(self, dlogits):
        m1, m2, m3 = self.masks
        d = self.fc.backward(dlogits).reshape(self.a3_shape) * m3
        d = self.conv4.backward(self.bn4.backward(d)) * m2  # into the residual sum
        d_skip = d
        d = self.conv3.backward(self.bn3.backward(d)) * self.h_mask
        d = self.conv2.backward(self.bn2.backward(d)) + d_skip
        self.conv1.backward(self.bn1.backward(d * m1))

    def params_and_grads(self):
        for layer in self.layers:
            yield from zip(layer.params, layer.grads)


def train(x_train, y_train, rng):
    net = Net(rng)
    adam_m, adam_v, step = {}, {}, 0
    for epoch in range(EPOCHS):
        lr = 3e-3 * 0.5 * (1 + np.cos(np.pi * epoch / EPOCHS))  # cosine decay
        order = rng.permutation(len(x_train))
        for start in range(0, len(order), BATCH):
            idx = order[start:start + BATCH]
            logits = net.forward(x_train[idx], training=True)
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            p[np.arange(len(idx)), y_train[idx]] -= 1
            net.backward(p / len(idx))
            step += 1
            for k, (param, grad) in enumerate(net.params_and_grads()):
                grad = grad + 1e-4 * param
                adam_m[k] = 0.9 * adam_m.get(k, 0) + 0.1 * grad
                adam_v[k] = 0.999 * adam_v.get(k, 0) + 0.001 * grad * grad
                m_hat, v_hat = adam_m[k] / (1 - 0.9 ** step), adam_v[k] / (1 - 0.999 ** step)
                param -= lr * m_hat / (np.sqrt(v_hat) + 1e-8)
    return net


# ---- export ---------------------------------------------------------------------------------

def export(net, path):
    inits, nodes = [], []

    def const(name, array):
        inits.append(numpy_helper.from_array(np.asarray(array, dtype=np.float32), name))
        return name

    def conv_bn_relu(x, conv, bn, name, relu=True):
        strides = [conv.stride, conv.stride]
        nodes.append(helper.make_node("Conv", [x, const(f"{name}.weight", conv.w)], [f"{name}_conv"], name=f"{name}_conv",
                                      kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=strides))
        nodes.append(helper.make_node(
            "BatchNormalization",
            [f"{name}_conv", const(f"{name}.bn.scale", bn.gamma), const(f"{name}.bn.bias", bn.beta),
             const(f"{name}.bn.mean", bn.mean), const(f"{name}.bn.var", bn.var)],
            [f"{name}_bn"], name=f"{name}_bn", epsilon=BN_EPS))
        if not relu:
            return f"{name}_bn"
        nodes.append(helper.make_node("Relu", [f"{name}_bn"], [f"{name}_relu"], name=f"{name}_relu"))
        return f"{name}_relu"

    a1 = conv_bn_relu("x", net.conv1, net.bn1, "stem")
    h = conv_bn_relu(a1, net.conv2, net.bn2, "block1a")
    s = conv_bn_relu(h, net.conv3, net.bn3, "block1b", relu=False)
    nodes.append(helper.make_node("Add", [s, a1], ["block1_sum"], name="block1_add"))
    nodes.append(helper.make_node("Relu", ["block1_sum"], ["block1_out"], name="block1_relu"))
    a3 = conv_bn_relu("block1_out", net.conv4, net.bn4, "down")
    nodes.append(helper.make_node("Flatten", [a3], ["features"], name="flatten", axis=1))
    nodes.append(helper.make_node("Gemm", ["features", const("fc.weight", net.fc.w), const("fc.bias", net.fc.b)],
                                  ["logits"], name="fc", transB=1))
    graph = helper.make_graph(
        nodes, "digits_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="train_digits_cnn.py")
    model.ir_version = 7
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))


def write_tensor(path, array, name):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(numpy_helper.from_array(array, name).SerializeToString())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "tests" / "data" / "digits")
    args = parser.parse_args()

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None, :, :]  # pixel values 0..16 -> [0, 1]
    labels = digits.target.astype(np.int64)
    rng = np.random.default_rng(SEED)
    order = rng.permutation(len(images))
    test_idx, train_idx = order[:TEST_SIZE], order[TEST_SIZE:]

    net = train(images[train_idx].astype(np.float64), labels[train_idx], rng)
    numpy_acc = float((net.forward(images[test_idx].astype(np.float64)).argmax(axis=1) == labels[test_idx]).mean())
    print(f"numpy float64 test accuracy: {numpy_acc:.4f} ({len(test_idx)} images)")

    args.out.mkdir(parents=True, exist_ok=True)
    export(net, args.out / "digits_cnn.onnx")
    write_tensor(args.out / "x.pb", images[test_idx], "x")
    write_tensor(args.out / "labels.pb", labels[test_idx], "labels")
    for k in range(CALIB_BATCHES):
        batch = images[train_idx[k * CALIB_BATCH_SIZE:(k + 1) * CALIB_BATCH_SIZE]]
        write_tensor(args.out / "calib" / f"input_{k}.pb", batch, "x")

    try:
        import onnxruntime as ort
    except ImportError:
        return
    sess = ort.InferenceSession(str(args.out / "digits_cnn.onnx"), providers=["CPUExecutionProvider"])
    logits = sess.run(None, {"x": images[test_idx]})[0]
    print(f"onnxruntime float32 test accuracy: {float((logits.argmax(axis=1) == labels[test_idx]).mean()):.4f}")


if __name__ == "__main__":
    main()
