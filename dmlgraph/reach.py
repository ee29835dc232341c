"""What a divergence reaches: the values of a graph, its subgraphs' at any depth, that may
differ where some of them (the seeds) do, by their scope.

Where onnxruntime and ONNX are known to differ at a node (a Squeeze by an empty axes list, a
Scan-8 whose outputs onnxruntime gets wrong), ``check`` leaves uncompared only the outputs
that difference reaches. Over, never under: a value is left out only where no path of
values, and no change in which nodes run how often, leads to it from a seed. Names alone do
not say which value is meant: an If's two branches, or two bodies, may each define ``t``, and
a subgraph's inputs may hide an enclosing graph's names; so a value here is its scope (the
path to the subgraph defining it) and its name, each read resolved as ONNX scopes it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass

import onnx

from dmlgraph.subgraphs import attribute_graphs, defined_names

#: Where a value is defined: the steps from the root graph to its subgraph, each (the index
#: of the node holding it, the attribute, the index among that attribute's graphs).
Scope = tuple[tuple[int, str, int], ...]

#: A value: its scope and its name there.
Value = tuple[Scope, str]

#: The scope of the names the root graph reads and does not define: the enclosing graph's.
ENCLOSING: Scope = ((-1, "", -1),)


def scoped_graphs(graph: onnx.GraphProto,
                  scope: Scope = ()) -> Iterator[tuple[Scope, onnx.GraphProto]]:
    """``graph`` (at ``scope``) and every subgraph its nodes hold, at any depth, with its scope."""
    yield scope, graph
    for k, node in enumerate(graph.node):
        for attr in node.attribute:
            for j, sub in enumerate(attribute_graphs(attr)):
                yield from scoped_graphs(sub, (*scope, (k, attr.name, j)))


def defined_values(graph: onnx.GraphProto, names: Collection[str]) -> set[Value] | None:
    """Every value of ``graph`` (at any depth) named one of ``names``: each scope defining
    the name (a name reused by two branches seeds both, over not under); None where one of
    ``names`` is defined nowhere there."""
    found = {(scope, name) for scope, g in scoped_graphs(graph) for name in defined_names(g)
             if name in names}
    return found if {name for _, name in found} >= set(names) else None


def output_values(graph: onnx.GraphProto, scope: Scope = (),
                  env: Mapping[str, Value] | None = None) -> list[Value]:
    """The values ``graph``'s outputs name, by ``env`` (the bindings at its end), else as the
    root graph's: its own where it defines the name, else the enclosing graph's."""
    own = set(defined_names(graph))
    return [env[v.name] if env is not None and v.name in env else (
        (scope, v.name) if v.name in own else (ENCLOSING, v.name)) for v in graph.output]


def reach(graph: onnx.GraphProto, seeds: Collection[Value]) -> set[Value]:
    """The values of ``graph`` (at any depth) that ``seeds`` reach, the seeds among them."""
    reached = set(seeds)
    _walk(graph, (), {}, reached)
    return reached


def holder_outputs(node: onnx.NodeProto, reached: Collection[str]) -> list[str]:
    """The outputs of ``node`` (one holding subgraphs) that the names it reads in
    ``reached`` reach: its explicit inputs, and the enclosing tensors its subgraphs read, by
    the names they read them by."""
    found = reach(onnx.helper.make_graph([node], "holder", [], []),
                  {(ENCLOSING, name) for name in reached})
    return [out for out in node.output if out and ((), out) in found]


def _walk(graph: onnx.GraphProto, scope: Scope, outer: Mapping[str, Value],
          reached: set[Value]) -> tuple[dict[str, Value], bool]:
    """Adds to ``reached`` what it reaches in ``graph`` (at ``scope``, reading ``outer``'s
    bindings of the enclosing names); the bindings at its end, and whether a node there (at
    any depth) read a reached value or an output names one."""
    env = dict(outer)
    env.update((name, (scope, name)) for name in (*(v.name for v in graph.input),
                                                  *(t.name for t in graph.initializer)))
    touched = False
    for k, node in enumerate(graph.node):
        reads = [env.get(name, (ENCLOSING, name)) for name in node.input if name]
        held = [((*scope, (k, attr.name, j)), sub) for attr in node.attribute
                for j, sub in enumerate(attribute_graphs(attr))]
        explicit = [env.get(name, (ENCLOSING, name)) if name else None for name in node.input]
        if held:
            made, inside = _holder(node, explicit, held, env, reached)
        else:
            made, inside = [any(r in reached for r in reads)] * len(node.output), False
        touched = touched or inside or any(r in reached for r in reads)
        for name, hit in zip(node.output, made):
            if name:
                env[name] = (scope, name)
                if hit:
                    reached.add((scope, name))
    outputs = output_values(graph, scope, env)
    return env, touched or any(value in reached for value in outputs)


def _whole(held: Sequence[tuple[Scope, onnx.GraphProto]], reached: set[Value]) -> None:
    """Counts every value ``held`` (at any depth) defines reached: which of its nodes run,
    or how often, may differ."""
    for scope, sub in held:
        reached.update((s, name) for s, g in scoped_graphs(sub, scope)
                       for name in defined_names(g))


def _holder(node: onnx.NodeProto, explicit: Sequence[Value | None],
            held: Sequence[tuple[Scope, onnx.GraphProto]], env: Mapping[str, Value],
            reached: set[Value]) -> tuple[list[bool], bool]:
    """Which outputs of a node holding subgraphs are reached (``explicit``: its inputs'
    values, None for one left out), and whether its subgraphs read a reached value: an If's
    by its branches' outputs, a Loop's or Scan's through its body (``_through``); another
    op's (or one of counts its node fails on) all, where anything it reads is."""
    count = len(node.output)
    by_attr = {scope[-1][1]: (scope, sub) for scope, sub in held}
    if node.op_type == "If" and node.domain in ("", "ai.onnx") and set(by_attr) == {
            "then_branch", "else_branch"} and len(held) == 2:
        return _if(explicit[0] if explicit else None,
                   [by_attr["then_branch"], by_attr["else_branch"]], count, env, reached)
    wiring = _wiring(node, held[0][1]) if len(held) == 1 else None
    if wiring is not None:
        return _through(wiring, explicit, held[0], count, env, reached)
    inside = False
    for scope, sub in held:
        inside = _walk(sub, scope, env, reached)[1] or inside
    hit = inside or any(value in reached for value in explicit if value)
    if hit:
        _whole(held, reached)
    return [hit] * count, inside


def _if(cond: Value | None, branches: Sequence[tuple[Scope, onnx.GraphProto]], count: int,
        env: Mapping[str, Value], reached: set[Value]) -> tuple[list[bool], bool]:
    """An If's outputs reached: each where either branch's output there is, all where its
    condition is (the branch that runs may differ; so may every value either makes)."""
    if cond is None or cond in reached:  # (None: no condition, which its node fails on)
        _whole(branches, reached)
        return [True] * count, True
    made = [False] * count
    inside = False
    for scope, sub in branches:
        inner, read = _walk(sub, scope, env, reached)
        inside = inside or read
        values = output_values(sub, scope, inner)
        made = [hit or k >= len(values) or values[k] in reached for k, hit in enumerate(made)]
    return made, inside


@dataclass(frozen=True)
class _BodyWiring:
    """How a Loop's or Scan's explicit inputs and outputs meet its body's (by position):
    ``inputs`` node input -> body input; ``fed_back`` body output -> the body input it is fed
    back as on the next run (and that a run of no step leaves it as fed); ``outputs`` node
    output -> body output; ``whole``: the node inputs that, reached, decide how many runs
    there are (a Loop's trip count and condition, a Scan-8's sequence lengths), which every
    output but a carried value passed through shows; ``scans``: those that do so only all
    reached (a Scan's scan inputs: each must be as long as the others, or its node fails, so
    one not reached fixes how many steps run, and a reached one's rows reach only what the
    body makes of them); ``condition``: the body output that, reached, decides how many
    runs there are too (a Loop's); ``scan``: a
    Scan's, whose body output naming its input itself onnxruntime gets wrong, as it does a
    tensor two outputs name (``control.scan_body_divergence``): neither is counted passed
    on (nor, to be safe, a Loop's tensor two outputs name)."""

    inputs: Mapping[int, int]
    fed_back: Mapping[int, int]
    outputs: Mapping[int, int]
    whole: frozenset[int]
    condition: int | None
    scan: bool = False
    scans: frozenset[int] = frozenset()


def _wiring(node: onnx.NodeProto, body: onnx.GraphProto) -> _BodyWiring | None:
    """A Loop's or Scan's ``_BodyWiring``; None for another node, or counts that fit neither
    a Loop, a Scan-9+ nor a Scan-8 (its node fails on them)."""
    if node.domain not in ("", "ai.onnx"):
        return None
    explicit, own, made = len(node.input), len(body.input), len(body.output)
    if node.op_type == "Loop" and explicit >= 2 and own == explicit and made >= own - 1:
        return _BodyWiring({k: k for k in range(2, explicit)},
                           {k - 1: k for k in range(2, explicit)},
                           {j: j + 1 for j in range(len(node.output))}, frozenset({0, 1}), 0)
    if node.op_type != "Scan" or explicit - own not in (0, 1):
        return None
    first = explicit - own  # (a Scan-8's sequence lengths come first)
    scans = next((a.i for a in node.attribute if a.name == "num_scan_inputs"), 0)
    states = own - scans
    if not 0 <= states <= made:
        return None
    return _BodyWiring({first + k: k for k in range(own)}, {k: k for k in range(states)},
                       {j: j for j in range(len(node.output))}, frozenset(range(first)),
                       None, True, frozenset(range(first + states, explicit)))


def _through(wiring: _BodyWiring, explicit: Sequence[Value | None],
             held: tuple[Scope, onnx.GraphProto], count: int, env: Mapping[str, Value],
             reached: set[Value]) -> tuple[list[bool], bool]:
    """A Loop's or Scan's outputs reached through its body: each where the body output it
    comes from is, within the body, reached from a reached input (an explicit one, or an
    enclosing value the body reads), carried values and states fed back to a fixed point,
    or where it is one such and the value fed as it is (a run of no step leaves it so).
    Where how many runs there are is reached (``_BodyWiring.whole``, every one of its
    ``scans``, or a Loop body's condition), every value of the body is, and every output but
    a carried value or state passed on unchanged (``_passed_through``; a Scan's by an
    Identity, ``_BodyWiring.scan``) and fed one not reached."""
    scope, body = held
    inputs = [value.name for value in body.input]
    fed = {wiring.inputs[k] for k, value in enumerate(explicit)
           if value is not None and value in reached and k in wiring.inputs}
    runs = any(explicit[k] in reached for k in wiring.whole
               if k < len(explicit) and explicit[k] is not None) or bool(wiring.scans) and all(
        k < len(explicit) and explicit[k] in reached for k in wiring.scans)
    inside = runs
    values: list[Value] = []
    while not runs:
        reached.update((scope, inputs[i]) for i in fed if i < len(inputs))
        inner, read = _walk(body, scope, env, reached)
        inside = inside or read
        values = output_values(body, scope, inner)
        runs = wiring.condition is not None and (
            wiring.condition >= len(values) or values[wiring.condition] in reached)
        more = {i for o, i in wiring.fed_back.items() if o < len(values) and values[o] in reached}
        if runs or more <= fed:
            break
        fed |= more
    if runs:
        _whole([held], reached)
        names = [value.name for value in body.output]
        passed = {o for o, i in wiring.fed_back.items()
                  if i < len(inputs) and o < len(names) and i not in fed
                  and _passed_through(body, names[o]) == inputs[i]
                  and names.count(names[o]) == 1 and not (wiring.scan and names[o] in inputs)}
        return [wiring.outputs.get(j) not in passed for j in range(count)], True
    made = []
    for j in range(count):
        o = wiring.outputs.get(j)
        made.append(o is None or o >= len(values) or values[o] in reached
                    or wiring.fed_back.get(o) in fed)
    return made, inside


def _passed_through(body: onnx.GraphProto, name: str) -> str:
    """The body input ``name`` is, passed on by the body's Identity nodes (or itself); ""
    where it is something the body makes otherwise."""
    makers = {out: node for node in body.node for out in node.output if out}
    own = {tensor.name for tensor in body.initializer}
    inputs = {value.name for value in body.input}
    seen: set[str] = set()
    while name in makers and name not in seen:
        node = makers[name]
        if node.op_type != "Identity" or node.domain not in ("", "ai.onnx") or not node.input:
            return ""
        seen.add(name)
        name = node.input[0]
    return name if name in inputs and name not in own and name not in makers else ""


def scan_body_wrong(body: onnx.GraphProto, states: int) -> list[int]:
    """The positions of a Scan body's outputs (its first ``states`` inputs state variables)
    that onnxruntime gets wrong where the body makes an input an output as it is, or one
    tensor two outputs (``control.scan_body_divergence``): those, and each the body computes
    from a state fed back from one of them. The others onnxruntime computes."""
    inputs = [value.name for value in body.input]
    made = [value.name for value in body.output]
    wrong = {j for j, name in enumerate(made) if name in inputs or made.count(name) > 1}
    values = output_values(body)
    while True:  # a wrong state fed back makes what reads it wrong, states among them
        reached = reach(body, {((), inputs[j]) for j in wrong if j < states})
        more = wrong | {j for j, value in enumerate(values) if value in reached}
        if more == wrong:
            return sorted(wrong)
        wrong = more


def held_outputs(body: onnx.GraphProto, made: Collection[Value],
                 fed_back: Mapping[int, int]) -> list[int] | None:
    """The positions of ``body``'s outputs that its values ``made`` (at any depth) reach, one
    run after another: the output at each key of ``fed_back`` is fed back as the input at
    its value (a Loop body's carried values, a Scan body's state variables), and so reaches
    what that input does: [] where they reach none. None where ``made`` is empty or one of
    it is not the body's: not known."""
    defined = {(scope, name) for scope, g in scoped_graphs(body) for name in defined_names(g)}
    if not made or not set(made) <= defined:
        return None
    inputs = [value.name for value in body.input]
    reached = set(made)
    while True:
        env, _ = _walk(body, (), {}, reached)
        values = output_values(body, (), env)
        fed = {((), inputs[i]) for o, i in fed_back.items()
               if o < len(values) and i < len(inputs) and values[o] in reached}
        if fed <= reached:
            break
        reached |= fed
    return [k for k, value in enumerate(values) if value in reached]


def reached_outputs(op_type: str, explicit: int, states: int, body: onnx.GraphProto,
                    made: Collection[Value], outputs: Sequence[str]) -> tuple[str, ...] | None:
    """The outputs (``outputs``) of an If, Loop or Scan (of ``explicit`` explicit inputs, a
    Scan's first ``states`` of them its state variables) that the values ``made`` of its
    subgraph ``body`` (at any depth) reach (``held_outputs``): a Loop body's carried values
    and a Scan body's state variables fed back; every one where a Loop's condition is
    reached; () where they reach none (a Scan's state passed through that its holder's body
    drops left every output of a Loop run whole "not compared"). None where that is not
    known: every one."""
    fed_back = {1 + k: 2 + k for k in range(explicit - 2)} if op_type == "Loop" else (
        {k: k for k in range(states)} if op_type == "Scan" else {})
    positions = held_outputs(body, made, fed_back)
    if op_type == "Loop":  # its body's condition first (then every trip is), then its outputs
        positions = None if positions is None or 0 in positions else [p - 1 for p in positions]
    if positions is None:
        return None
    return tuple(outputs[p] for p in positions if p < len(outputs) and outputs[p])
