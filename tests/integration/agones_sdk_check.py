#!/usr/bin/env python3
"""agones_sdk_check.py SWAGGER LOG [SOURCE...]

Checks a tests/fakes/fake_agones_sdk log (GET /fake/log) against the Agones
SDK gateway's published API (sdk.swagger.json), for supervisor_agones.sh:

- every request (all of them came from cc-supervisor) names a path and
  method of the swagger file, and its body validates against the
  operation's body schema (none for GET);
- every answer the fake gave validates against the operation's 200 schema
  (other statuses: googlerpcStatus);
- every field name SOURCE files read (cJSON_GetObjectItemCaseSensitive,
  cc_json_get_*, opt_str with a literal name: cc-supervisor's agones_sdk.c)
  is a property somewhere in the file.

Validation follows the $refs; an object member the schema does not define
is an error, as is a JSON type other than the schema's (64-bit integers,
format int64, are strings of digits). A message field may be null (the
gateway emits unset messages as null). Prints one line per problem and
exits 1 when there is any.
"""
import json
import re
import sys

problems = []


def resolve(sw, schema):
    while "$ref" in schema:
        name = schema["$ref"].split("/")[-1]
        schema = sw["definitions"][name]
    return schema


def validate(sw, schema, value, where):
    is_ref = "$ref" in schema
    schema = resolve(sw, schema)
    t = schema.get("type", "object")
    if value is None:
        if not (is_ref and t == "object"):
            problems.append(f"{where}: null where the schema wants {t}")
        return
    if t == "object":
        if not isinstance(value, dict):
            problems.append(f"{where}: {type(value).__name__} where the schema wants an object")
            return
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for k, v in value.items():
            if k in props:
                validate(sw, props[k], v, f"{where}.{k}")
            elif extra is not None:
                if extra:
                    validate(sw, extra, v, f"{where}[{k!r}]")
            else:
                problems.append(f"{where}.{k}: not defined by the swagger file")
    elif t == "array":
        if not isinstance(value, list):
            problems.append(f"{where}: {type(value).__name__} where the schema wants an array")
            return
        for i, v in enumerate(value):
            validate(sw, schema.get("items", {}), v, f"{where}[{i}]")
    elif t == "string":
        if not isinstance(value, str):
            problems.append(f"{where}: {type(value).__name__} where the schema wants a string")
        elif schema.get("format") == "int64" and not re.fullmatch(r"-?[0-9]+", value):
            problems.append(f"{where}: {value!r} is not an int64 string")
    elif t == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            problems.append(f"{where}: {value!r} where the schema wants an integer")
    elif t == "boolean":
        if not isinstance(value, bool):
            problems.append(f"{where}: {value!r} where the schema wants a boolean")


def main():
    sw = json.load(open(sys.argv[1]))
    log = json.load(open(sys.argv[2]))
    paths = sw["paths"]
    checked = 0
    for r in log["requests"]:
        path, method = r["path"], r["method"].lower()
        op = paths.get(path, {}).get(method)
        if op is None:
            problems.append(f"request {r['method']} {path}: not an operation of the swagger file")
            continue
        body_params = [p for p in op.get("parameters", []) if p.get("in") == "body"]
        if body_params:
            validate(sw, body_params[0]["schema"], r["body"], f"request {r['method']} {path} body")
        elif r["body"] is not None:
            problems.append(f"request {r['method']} {path}: a body the operation does not take")
        checked += 1
    for a in log["answers"]:
        path = a["path"]
        ops = paths.get(path, {})
        op = next(iter(ops.values()), None)
        if op is None:
            problems.append(f"answer for {path}: not a path of the swagger file")
            continue
        schema = op["responses"]["200"]["schema"] if a["status"] == 200 else {"$ref": "#/definitions/googlerpcStatus"}
        validate(sw, schema, a["body"], f"answer {a['status']} for {path}")
        checked += 1
    names = set()
    for d in sw["definitions"].values():
        names.update(d.get("properties", {}).keys())
    for src in sys.argv[3:]:
        for field in re.findall(r'(?:cJSON_GetObjectItemCaseSensitive|opt_str|cc_json_get_\w+)\(\s*[^,()]+,\s*"([^"]+)"',
                                open(src).read()):
            if field not in names:
                problems.append(f"{src} reads field {field!r}, which the swagger file does not define")
            checked += 1
    for p in problems:
        print(p)
    print(f"checked {checked} requests, answers and field reads; {len(problems)} problems")
    sys.exit(1 if problems else 0)


main()
