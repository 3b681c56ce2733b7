package mcp

import (
	"bytes"
	"context"
	"encoding/json"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// titledItemsLeniency is a receiving middleware of lathe's client to
// upstream servers. MCP's titled multiple choice gives an array's items an
// anyOf of {const, title} entries and no type; servers in the wild (among
// them go-sdk's own conformance fixture) add "type": "string" to those
// items. The go-sdk client refuses such a schema before any handler sees
// the request ("items must specify enum for untitled enums"), so that
// lathe could neither ask its own client nor say why. The extra type says
// nothing the string consts do not, so it is dropped here, before the
// SDK's check, and the request is passed on in MCP's own form, which every
// client takes.
func titledItemsLeniency(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if r, ok := req.(*sdk.ElicitRequest); ok && r.Params != nil && r.Params.RequestedSchema != nil {
			if s, changed := untypeTitledItems(r.Params.RequestedSchema); changed {
				r.Params.RequestedSchema = s
			}
		}
		return next(ctx, method, req)
	}
}

// untypeTitledItems returns schema with the "type": "string" of each
// titled multiple choice's items removed, and whether there was one. A
// schema it cannot read is left to the SDK's own check.
func untypeTitledItems(schema any) (json.RawMessage, bool) {
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, false
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var root map[string]any
	if d.Decode(&root) != nil {
		return nil, false
	}
	props, _ := root["properties"].(map[string]any)
	changed := false
	for _, p := range props {
		prop, _ := p.(map[string]any)
		if prop == nil || prop["type"] != "array" {
			continue
		}
		items, _ := prop["items"].(map[string]any)
		if items == nil || items["type"] != "string" {
			continue
		}
		entries, _ := items["anyOf"].([]any)
		if len(entries) == 0 || items["enum"] != nil {
			continue
		}
		consts := true
		for _, e := range entries {
			entry, _ := e.(map[string]any)
			if _, ok := entry["const"].(string); !ok {
				consts = false
				break
			}
		}
		if consts {
			delete(items, "type")
			changed = true
		}
	}
	if !changed {
		return nil, false
	}
	out, err := json.Marshal(root)
	if err != nil {
		return nil, false
	}
	return out, true
}
