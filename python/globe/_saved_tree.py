"""What flow.save stores besides a flat state dict: any nesting of dicts, lists and tuples whose
leaves are tensors, numbers, strings, booleans or None (a model's and an optimizer's state dicts in
one file, nn.Graph.state_dict(), an epoch count). The tensors go into the safetensors file under
their key paths joined by "." ("optimizer.state.0.exp_avg"); the nesting and the other leaves go
into the file's metadata as JSON, under STRUCTURE_KEY. A flat dict of tensors is stored as it is,
with no metadata, as before: other safetensors readers see the same tensors either way."""
import json

from ._globe import Tensor

STRUCTURE_KEY = "globe.python"
_SCALARS = (bool, int, float, str, type(None))


def is_flat(obj):
    return isinstance(obj, dict) and all(isinstance(k, str) and isinstance(v, Tensor) for k, v in obj.items())


def flatten(obj):
    """(tensors by name, the structure as JSON) for flow.save; the structure is None for a flat
    dict of tensors."""
    if is_flat(obj):
        return dict(obj), None
    tensors = {}

    def name_for(path):
        name = ".".join(str(p) for p in path) or "tensor"
        unique, n = name, 1
        while unique in tensors:  # keys holding dots can meet: "a.b" and ("a", "b")
            unique, n = f"{name}#{n}", n + 1
        return unique

    def walk(x, path):
        if isinstance(x, Tensor):
            name = name_for(path)
            tensors[name] = x
            return {"tensor": name}
        if isinstance(x, dict):
            for k in x:
                if not isinstance(k, _SCALARS):
                    raise TypeError(f"flow.save: a dict key {k!r} at {'.'.join(map(str, path)) or 'the top'} is a "
                                    f"{type(k).__name__}; keys are strings, numbers, booleans or None")
            return {"dict": [[k, walk(v, path + (k,))] for k, v in x.items()]}
        if isinstance(x, (list, tuple)):
            return {"list" if isinstance(x, list) else "tuple": [walk(v, path + (i,)) for i, v in enumerate(x)]}
        if isinstance(x, _SCALARS):
            return {"value": x}
        raise TypeError(f"flow.save: cannot store a {type(x).__name__} at {'.'.join(map(str, path)) or 'the top'}: "
                        "tensors, numbers, strings, booleans, None, and dicts, lists and tuples of them")

    structure = walk(obj, ())
    return tensors, json.dumps(structure)


def unflatten(tensors, structure):
    """flatten's inverse for flow.load: the nesting rebuilt around the loaded tensors."""
    def build(node):
        if "tensor" in node:
            return tensors[node["tensor"]]
        if "dict" in node:
            return {k: build(v) for k, v in node["dict"]}
        if "list" in node:
            return [build(v) for v in node["list"]]
        if "tuple" in node:
            return tuple(build(v) for v in node["tuple"])
        return node["value"]

    return build(json.loads(structure))
