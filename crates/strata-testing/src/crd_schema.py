"""Checks objects of other projects' kinds against those projects' CRDs, strictly.

Reads {"schemas": {"<apiVersion>/<kind>": <openAPIV3Schema>}, "documents": [...]} on
standard input and prints {"checked": N, "problems": [...]}. The OpenAPI schemas become
JSON Schemas as the API server reads them: `nullable` admits null,
`x-kubernetes-int-or-string` admits both, and an object with `properties` refuses
other fields unless it preserves unknown fields, as strict field validation does.
CEL rules (x-kubernetes-validations) are not evaluated: the real-control-plane tests
prove those.
"""
import json
import sys

import jsonschema


def strict(schema):
    if not isinstance(schema, dict):
        return schema
    schema = {key: value for key, value in schema.items() if key != "x-kubernetes-validations"}
    for key in ("properties", "patternProperties"):
        if key in schema:
            schema[key] = {name: strict(value) for name, value in schema[key].items()}
    for key in ("items", "additionalProperties", "not"):
        if isinstance(schema.get(key), dict):
            schema[key] = strict(schema[key])
    for key in ("allOf", "anyOf", "oneOf"):
        if key in schema:
            schema[key] = [strict(value) for value in schema[key]]
    if schema.pop("x-kubernetes-int-or-string", False):
        schema.pop("type", None)
        schema["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if schema.pop("nullable", False) and "type" in schema:
        schema["type"] = [schema["type"], "null"]
    preserve = schema.pop("x-kubernetes-preserve-unknown-fields", False)
    if "properties" in schema and "additionalProperties" not in schema and not preserve:
        schema["additionalProperties"] = False
    return schema


def main():
    given = json.load(sys.stdin)
    validators = {
        key: jsonschema.Draft7Validator(strict(schema)) for key, schema in given["schemas"].items()
    }
    problems = []
    for document in given["documents"]:
        key = "%s/%s" % (document.get("apiVersion"), document.get("kind"))
        name = (document.get("metadata") or {}).get("name")
        validator = validators.get(key)
        if validator is None:
            problems.append("%s %s: no CRD defines it" % (key, name))
            continue
        for error in sorted(validator.iter_errors(document), key=lambda error: list(error.absolute_path)):
            path = ".".join(str(part) for part in error.absolute_path) or "(the object)"
            problems.append("%s %s: %s: %s" % (key, name, path, error.message))
    print(json.dumps({"checked": len(given["documents"]), "problems": problems}))


main()
