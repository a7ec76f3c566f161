"""The memoizing parser gives the IR the plain xDSL parser gives, reuses what it parsed
once, and reports errors where the plain parser does."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError

from dnnc.errors import IRError
from dnnc.ir.context import make_context
from dnnc.ir.memo_parser import MemoParser, _balanced_end, _type_end
from dnnc.ir.text import parse_ir, print_ir

ALL_OPS = Path(__file__).with_name("all_ops.mlir")

REPEATS = """builtin.module {
  func.func @forward(%x: tensor<2x8xf32>, %y: tensor<2x8xf32>) -> tensor<2x8xf32> {
    %0 = tcp.add %x, %y : tensor<2x8xf32>
    %1 = tcp.clamp %0 {min = 0.000000e+00 : f64} : tensor<2x8xf32>
    %2 = tcp.clamp %1 {min = 0.000000e+00 : f64} : tensor<2x8xf32>
    // a comment between ops: {not = "a dict"} tensor<9xf32>
    %3 = tcp.clamp %2 {min = 1.000000e+00 : f64, dnnc.note = "braces } and > -> in a \\22string\\22 {"} : tensor<2x8xf32>
    %4 = tcp.clamp %3 {min = 1.000000e+00 : f64, dnnc.note = "braces } and > -> in a \\22string\\22 {"} : tensor<2x8xf32>
    func.return %4 : tensor<2x8xf32>
  }
}
"""


def _plain(text: str) -> str:
    return print_ir(Parser(make_context(), text).parse_module())


def _memo(text: str) -> str:
    return print_ir(MemoParser(make_context(), text).parse_module())


def test_same_ir_as_the_plain_parser_on_every_op() -> None:
    text = ALL_OPS.read_text()
    assert _memo(text) == _plain(text)


def test_same_ir_with_repeated_types_dicts_strings_and_comments() -> None:
    assert _memo(REPEATS) == _plain(REPEATS)


@pytest.mark.parametrize("name", ["mobilenet_v2", "vit_block", "gpt2_block"])
def test_same_ir_on_models(name: str, canonical_models: dict) -> None:
    text = canonical_models[name][0].text()
    assert _memo(text) == _plain(text) == text


def test_a_repeated_type_and_dict_are_parsed_once() -> None:
    module = MemoParser(make_context(), REPEATS).parse_module()
    ops = list(module.walk())
    clamps = [op for op in ops if op.name == "tcp.clamp"]
    assert clamps[0].results[0].type is clamps[1].results[0].type  # one parsed type, reused
    assert clamps[0].properties["min"] is clamps[1].properties["min"]  # one parsed dictionary's entries
    assert clamps[2].attributes["dnnc.note"] is clamps[3].attributes["dnnc.note"]
    assert clamps[1].attributes is not clamps[0].attributes  # each op its own dictionary


def test_an_error_after_a_memoized_type_names_its_line() -> None:
    broken = REPEATS.replace(
        "%2 = tcp.clamp %1 {min = 0.000000e+00 : f64} : tensor<2x8xf32>", "%2 = tcp.clamp %1 : tensor<2x8xq32>"
    )
    with pytest.raises(ParseError):
        Parser(make_context(), broken).parse_module()
    with pytest.raises(IRError, match=r"(?s)cannot parse IR.*:5:"):
        parse_ir(broken, "broken.mlir")


def test_scans() -> None:
    text = "tensor<2x3xf16, strided<[3, 1]>> rest"
    assert text[: _type_end(text, 0)] == "tensor<2x3xf16, strided<[3, 1]>>"
    assert _type_end("(f32) -> f32", 0) is None  # a function type is parsed the plain way
    assert _type_end("f16 x", 0) == 3
    assert _type_end("tensor<2xf32", 0) is None  # unclosed
    dict_text = '{a = "}{", b = (i32) -> i32} tail'
    assert dict_text[: _balanced_end(dict_text, 0, "{", "}")] == '{a = "}{", b = (i32) -> i32}'
    escaped = '{a = "\\"}"} tail'
    assert escaped[: _balanced_end(escaped, 0, "{", "}")] == '{a = "\\"}"}'
