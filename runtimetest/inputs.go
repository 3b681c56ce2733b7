package runtimetest

// The input types of the suite's tools, for runtimes whose tools are typed
// Go functions (builtin, the SDK): each names the arguments its [Spec] says
// the tool takes.
type (
	// TextIn is the input of the echo tool.
	TextIn struct {
		Text string `json:"text"`
	}
	// MessageIn is the input of the fail and crash tools.
	MessageIn struct {
		Message string `json:"message"`
	}
	// MarkerIn is the input of the sleep tool: the file it records its
	// processes in.
	MarkerIn struct {
		Marker string `json:"marker"`
	}
	// SizeIn is the input of the huge-output tool.
	SizeIn struct {
		Size int `json:"size" jsonschema:"minimum=1"`
	}
	// SubjectIn is the input of the asking tool.
	SubjectIn struct {
		Subject string `json:"subject"`
	}
)
