"""The EP's messages follow ONNX Runtime's logging: they go through the logger
ORT hands the EP — the session logger with add_provider / add_provider_for_devices,
so SessionOptions.log_severity_level decides; ORT's default logger when ORT's
Python API creates the EP from a providers=[...] list — under the EP's own
log_level option. The internal test hook is no provider option. Each case
creates a session of a CNN with one declined node (its first convolution
dilated: a warning) and host-only Softmax (info) and reads what ORT printed on stderr."""
from __future__ import annotations

import pytest

ort = pytest.importorskip("onnxruntime")

import nacc.onnxruntime as nort  # noqa: E402
import onnx_models as om  # noqa: E402

WARNING = "NaccExecutionProvider: Conv 'conv1' stays on the host"
INFO = "NaccExecutionProvider: Softmax runs on the host"


@pytest.fixture(scope="module")
def model():
    nort.register()
    # conv1 as a 13x13 window padded 6 (the shape is kept) is declined: a
    # padding above 5. (Dilation, which used to be the declined form, runs as
    # phases now; the GlobalAveragePool over 16x16 that was declined before
    # that is claimed: the ones-operand matmul of docs/compiler.md "MEAN".)
    m = om.small_cnn(hw=64, softmax_in_middle=True)
    for node in m.graph.node:
        if node.name == "conv1":
            for a in node.attribute:
                if a.name == "pads":
                    a.ints[:] = [6, 6, 6, 6]
                if a.name == "kernel_shape":
                    a.ints[:] = [13, 13]
    for i, init in enumerate(m.graph.initializer):
        if init.name == "w1":
            m.graph.initializer[i].CopyFrom(om.numpy_helper.from_array(
                om.rng_weights((8, 3, 13, 13), 11, 0.05), "w1"))
    return om.quantize(m)


@pytest.fixture(autouse=True)
def default_logger_at_warning():
    ort.set_default_logger_severity(2)
    yield
    ort.set_default_logger_severity(2)


def printed(capfd, model, form, severity, options):
    so = ort.SessionOptions()
    if severity is not None:
        so.log_severity_level = severity
    kw = {}
    if form == "devices":
        so.add_provider_for_devices(nort.ep_devices(), options)
    elif form == "name":
        so.add_provider(nort.EP_NAME, options)
    else:
        kw["providers"] = [(nort.EP_NAME, options), "CPUExecutionProvider"]
    capfd.readouterr()
    sess = ort.InferenceSession(model, sess_options=so, **kw)
    nort.check_session(sess)
    return capfd.readouterr().err


# (selection form, session log_severity_level, EP options, warning printed, info printed)
CASES = [
    ("devices", 3, {}, False, False),        # the session logger: errors only
    ("devices", 2, {}, True, False),
    ("devices", 1, {}, True, True),
    ("name", 3, {}, False, False),
    ("name", 1, {}, True, True),
    ("name", 1, {"log_level": "warning"}, True, False),  # the EP's floor under the session's
    ("name", 1, {"log_level": "off"}, False, False),
    ("devices", 0, {"log_level": "error"}, False, False),
    # providers=[...]: ORT's Python API hands the EP its default logger (at WARNING here),
    # so the session's level does not apply; log_level does.
    ("list", 3, {}, True, False),
    ("list", 3, {"log_level": "error"}, False, False),
    ("list", None, {"log_level": "off"}, False, False),
]


@pytest.mark.parametrize("form,severity,options,warning,info", CASES)
def test_ep_messages_follow_the_logger_and_log_level(capfd, model, form, severity, options,
                                                     warning, info):
    err = printed(capfd, model, form, severity, options)
    assert (WARNING in err) == warning, err
    assert (INFO in err) == info, err
    # The reason does not repeat the node's label.
    for line in err.splitlines():
        if WARNING in line:
            assert line.count("Conv 'conv1'") == 1, line


def test_create_session_uses_the_session_logger(capfd, model):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    capfd.readouterr()
    nort.create_session(model, {"cores": 2}, so)
    assert WARNING not in capfd.readouterr().err


def test_options_table_has_log_level_and_no_test_hook():
    specs = {s.name: s for s in nort.provider_option_specs()}
    assert "log_level" in specs and "test_perturb_node" not in specs
    assert "default" in specs["log_level"].allowed
    with pytest.raises(ValueError, match="unknown provider option 'test_perturb_node'"):
        nort.validate_provider_options({"test_perturb_node": "conv1"})
    with pytest.raises(ValueError, match="log_level='loud': must be default, off, error"):
        nort.validate_provider_options({"log_level": "loud"})


@pytest.mark.parametrize("options,fragment", [
    ({"sram_kb": 0}, "sram_kb='0': must be a power of two in [16, 1024]"),
    ({"clock_mhz": "0"}, "clock_mhz='0': must be an integer in [1, 10000]"),
    ({"cores": 3}, "cores='3': must be 1, 2, 4, 8, 16 or 32"),
    ({"bogus": 1}, "unknown provider option 'bogus'"),
    ({"core": 1}, "(did you mean 'cores'?)"),
    ({"fallback": True}, "must be a string, got bool"),
])
def test_validation_is_the_eps_own(options, fragment, model):
    """validate_provider_options runs the EP library's parser; create_session raises the
    same one-line ValueError before ORT could fall back to the CPU EP."""
    with pytest.raises(ValueError) as e:
        nort.validate_provider_options(options)
    assert fragment in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(ValueError, match="NaccExecutionProvider"):
        nort.create_session(model, options)


def test_check_session_refuses_a_cpu_only_session(model):
    cpu = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    with pytest.raises(nort.EpNotUsedError, match="not in this session's providers"):
        nort.check_session(cpu)
