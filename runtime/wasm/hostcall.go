package wasm

import (
	"context"
	"encoding/json"

	"github.com/lathe-tools/lathe/host"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// hostModule is the module of lathe's host functions, for a guest that
// would rather call than write JSON-RPC lines on its standard output
// (docs/host.md, "WASM tools").
const hostModule = "lathe"

// hostFunctions are the functions of hostModule.
var hostFunctions = map[string]bool{"host_call": true, "host_result": true}

// maxHostRequest bounds one request passed to host_call.
const maxHostRequest = 64 << 20

// callKey is the context key of a call's state, seen by host functions.
type callKey struct{}

// callState is what the host functions of one call share.
type callState struct {
	ctx  context.Context
	sess *host.Session
	held []byte // a response too long for the buffer it was asked into
}

// instantiateHostModule defines lathe.host_call and lathe.host_result:
//
//	host_call(req_ptr, req_len, resp_ptr, resp_cap i32) i64
//	host_result(resp_ptr, resp_cap i32) i64
//
// host_call runs the JSON-RPC request (one object, as on standard output)
// at req_ptr and writes the response object at resp_ptr when it fits in
// resp_cap bytes; it returns the response's length either way. When it is
// longer than resp_cap nothing is written and the response is held, for
// host_result to write into a buffer large enough. Both return -1 when a
// pointer is out of the module's memory, or (host_result) when nothing is
// held.
func instantiateHostModule(ctx context.Context, rt wazero.Runtime) error {
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	_, err := rt.NewHostModuleBuilder(hostModule).
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(hostCall), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i64}).
		WithParameterNames("req_ptr", "req_len", "resp_ptr", "resp_cap").Export("host_call").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(hostResult), []api.ValueType{i32, i32}, []api.ValueType{i64}).
		WithParameterNames("resp_ptr", "resp_cap").Export("host_result").
		Instantiate(ctx)
	return err
}

func hostCall(ctx context.Context, mod api.Module, stack []uint64) {
	reqPtr, reqLen := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	respPtr, respCap := api.DecodeU32(stack[2]), api.DecodeU32(stack[3])
	st, _ := ctx.Value(callKey{}).(*callState)
	stack[0] = api.EncodeI64(-1)
	if st == nil || reqLen > maxHostRequest {
		return
	}
	raw, ok := mod.Memory().Read(reqPtr, reqLen)
	if !ok {
		return
	}
	var resp *host.Response
	var req host.Request
	if err := json.Unmarshal(raw, &req); err != nil || req.Method == "" {
		resp = &host.Response{JSONRPC: "2.0", ID: req.ID, Error: &host.Error{Code: -32700, Message: "host_call: the request is not a JSON-RPC request object"}}
	} else {
		resp = do(st.ctx, st.sess, &req)
	}
	b, _ := json.Marshal(resp)
	st.held = nil
	if uint32(len(b)) > respCap {
		st.held = b
	} else if !mod.Memory().Write(respPtr, b) {
		return
	}
	stack[0] = api.EncodeI64(int64(len(b)))
}

func hostResult(ctx context.Context, mod api.Module, stack []uint64) {
	respPtr, respCap := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	st, _ := ctx.Value(callKey{}).(*callState)
	stack[0] = api.EncodeI64(-1)
	if st == nil || st.held == nil || uint32(len(st.held)) > respCap {
		if st != nil && st.held != nil {
			stack[0] = api.EncodeI64(int64(len(st.held)))
		}
		return
	}
	if !mod.Memory().Write(respPtr, st.held) {
		return
	}
	stack[0] = api.EncodeI64(int64(len(st.held)))
	st.held = nil
}
