package host

import "github.com/lathe-tools/lathe/host/wire"

// The host API's messages are defined in package wire, which a tool's
// client imports without the rest of lathe; these names are the same types.

type (
	Request        = wire.Request
	Response       = wire.Response
	Error          = wire.Error
	ReadParams     = wire.ReadParams
	ReadResult     = wire.ReadResult
	WriteParams    = wire.WriteParams
	WriteResult    = wire.WriteResult
	PathParams     = wire.PathParams
	RemoveParams   = wire.RemoveParams
	FileInfo       = wire.FileInfo
	ListResult     = wire.ListResult
	FetchParams    = wire.FetchParams
	FetchResult    = wire.FetchResult
	RunParams      = wire.RunParams
	RunResult      = wire.RunResult
	EnvParams      = wire.EnvParams
	EnvResult      = wire.EnvResult
	LogParams      = wire.LogParams
	ProgressParams = wire.ProgressParams
	AskParams      = wire.AskParams
	AskResult      = wire.AskResult
)

const (
	Version        = wire.Version
	MethodRead     = wire.MethodRead
	MethodWrite    = wire.MethodWrite
	MethodList     = wire.MethodList
	MethodStat     = wire.MethodStat
	MethodRemove   = wire.MethodRemove
	MethodFetch    = wire.MethodFetch
	MethodRun      = wire.MethodRun
	MethodEnv      = wire.MethodEnv
	MethodLog      = wire.MethodLog
	MethodProgress = wire.MethodProgress
	MethodAsk      = wire.MethodAsk
	CodeDenied     = wire.CodeDenied
	CodeFailed     = wire.CodeFailed
	CodeEnded      = wire.CodeEnded
	CodeTooLarge   = wire.CodeTooLarge
)
