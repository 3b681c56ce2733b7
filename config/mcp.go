package config

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"
)

// ToolPrefix is what is put before the server's tool names in lathe's
// registry: Prefix, or "NAME__" when it is not set.
func (s *MCPServer) ToolPrefix() string {
	if s.Prefix != nil {
		return *s.Prefix
	}
	return s.Name + "__"
}

// MCPServer is an [mcp.NAME] table: an upstream MCP server whose tools
// lathe offers as its own. A server is spoken to over stdio (Command) or
// over streamable HTTP (URL), never both.
//
// Strings of Command, Env, Cwd, URL and Headers may hold ${VAR}, replaced
// by the variable VAR of lathe's environment when the servers are resolved
// (see [Config.MCPServers]), so that a token need not be written in the file;
// $$ stands for a $ of its own.
type MCPServer struct {
	// Name is NAME.
	Name string `toml:"-"`
	// Enable = false leaves the server out; nil means it was not said.
	Enable *bool `toml:"enable"`
	// Command is the server's argv, as in command = ["npx", "-y", "some-server"].
	Command []string `toml:"command"`
	// Env holds variables set for the command. Besides them the command
	// gets only PATH, HOME, LANG, TERM and TMPDIR of lathe's environment and
	// the names of Permissions.Env.
	Env map[string]string `toml:"env"`
	// Cwd is the command's working directory; empty means the workspace.
	Cwd string `toml:"cwd"`
	// URL is the endpoint of a server over streamable HTTP.
	URL string `toml:"url"`
	// Headers are sent with every HTTP request.
	Headers map[string]string `toml:"headers"`
	// Prefix is put before the server's tool names; nil means "NAME__",
	// and "" means none.
	Prefix *string `toml:"prefix"`
	// Allow, if set, keeps only the tools whose name (on the server)
	// matches one of its patterns (* and ? as in a file name); Deny then
	// drops those matching one of its.
	Allow []string `toml:"allow"`
	Deny  []string `toml:"deny"`
	// Queue, if set, runs the server's tools on the workers of that queue
	// rather than here; the server is not started here.
	Queue Queue `toml:"queue"`
	// Timeout bounds one call of the server's tools.
	Timeout time.Duration `toml:"timeout"`
	// StartupTimeout bounds starting the server and listing its tools.
	StartupTimeout time.Duration `toml:"startup_timeout"`
	// PingInterval is how long a long-lived lathe (lathe serve) lets the
	// server sit idle before it checks, with a ping, that the server still
	// answers; one that does not is restarted. Nil means the loader's
	// default; "0s" turns pinging off. One-shot commands never ping.
	PingInterval *time.Duration `toml:"ping_interval"`
	// Optional = true reports a server that cannot be started, or whose
	// ${VAR} is not set, and goes on without it; otherwise such a server is
	// an error.
	Optional bool `toml:"optional"`
	// Resources = false and Prompts = false keep the server's resources
	// (with their templates and subscriptions) and its prompts from the
	// clients of `lathe serve`; nil means they are offered.
	Resources *bool `toml:"resources"`
	Prompts   *bool `toml:"prompts"`
	// LogLevel, if set, is the least level of the log messages the server
	// is asked to send from the start (logging/setLevel): "debug", "info",
	// "notice", "warning", "error", "critical", "alert" or "emergency". A
	// client of `lathe serve` may ask for a more verbose one.
	LogLevel string `toml:"log_level"`
	// Profile is the sandbox profile of the server's command, as for a
	// local tool; empty means [sandbox] profile, and with neither the
	// server runs as a host process with the minimal environment.
	Profile SandboxProfile `toml:"profile"`
	// Approval is the default approval of the server's tools: "allow",
	// "ask" or "deny" for every call of them that no [[policy.rules]] rule
	// decides. Empty leaves it to the tools' annotations.
	Approval Approval `toml:"approval"`
	// TrustAnnotations = true takes the server's annotations of its tools
	// at their word (a read-only tool runs unasked, and beside other reads
	// in a batch). Unset or false, only the hints that make a tool look
	// more dangerous count (see [Distrust]).
	TrustAnnotations *bool `toml:"trust_annotations"`
	// Permissions add to [sandbox.permissions] for this server's command:
	// paths it may read or write and the network (under a profile), and the
	// names of variables of lathe's environment it receives.
	Permissions SandboxPermissions `toml:"permissions"`
	// OAuth configures how lathe authorizes itself at a server over HTTP
	// that asks for the MCP authorization flow (lathe auth login NAME).
	// Most servers need none of it: lathe registers itself dynamically.
	OAuth MCPOAuth `toml:"oauth"`
	// Pos is where the table was defined, in the file that won.
	Pos Pos `toml:"-"`

	// Unavailable, set by [Config.MCPServers] on an optional server whose
	// ${VAR} is not set, says why the server cannot be started; such a
	// server is skipped, with a warning.
	Unavailable error `toml:"-"`
}

// MCPOAuth is an [mcp.NAME.oauth] table. Its strings may hold ${VAR}, as
// the server's headers may, so that a secret need not be in the file.
type MCPOAuth struct {
	// ClientID is a client registered beforehand at the authorization
	// server; empty means lathe registers itself dynamically (RFC 7591)
	// where the server offers it.
	ClientID string `toml:"client_id"`
	// ClientSecret is ClientID's secret, if it has one.
	ClientSecret string `toml:"client_secret"`
	// ClientMetadataURL is an HTTPS URL of a client ID metadata document,
	// used as the client_id where the authorization server supports them.
	ClientMetadataURL string `toml:"client_metadata_url"`
	// Scopes replace the scopes the server asks for.
	Scopes []string `toml:"scopes"`
	// CallbackPort is the port of the loopback listener that receives the
	// authorization (http://127.0.0.1:PORT/callback), for a client
	// registered with a fixed redirect URI; 0 picks a free port.
	CallbackPort int `toml:"callback_port"`
}

var (
	mcpNamePattern   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,47}$`)
	mcpPrefixPattern = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9_-]{0,47})?$`)
	varPattern       = regexp.MustCompile(`\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)
)

// mcpLogLevels are the levels of MCP's logging/setLevel, from the most
// verbose.
var mcpLogLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// MCPServers returns the enabled [mcp.NAME] servers, sorted by name, each
// checked and with ${VAR} replaced through lookup (os.LookupEnv, say). A
// server that names no transport or two, a bad name, prefix or environment
// name, a profile or permissions for a server over HTTP, or a variable that
// is not set is an error naming the file and line of its table; every such
// problem is reported. The one exception is an optional server whose
// ${VAR} is not set: it comes back with Unavailable saying so, for the
// caller to skip, since an optional server is one lathe can do without.
func (c *Config) MCPServers(lookup func(string) (string, bool)) ([]MCPServer, error) {
	if c == nil {
		return nil, nil
	}
	var (
		out  []MCPServer
		errs []error
	)
	for _, name := range slices.Sorted(maps.Keys(c.MCP)) {
		s := c.MCP[name]
		if s == nil || (s.Enable != nil && !*s.Enable) {
			continue
		}
		errorf := func(format string, args ...any) error {
			return &Error{Pos: s.Pos, Msg: fmt.Sprintf("[%s] ", keyString([]string{"mcp", name})) +
				fmt.Sprintf(format, args...)}
		}
		fail := func(format string, args ...any) { errs = append(errs, errorf(format, args...)) }
		r := *s
		r.Name = name
		switch {
		case !mcpNamePattern.MatchString(name):
			fail("invalid server name: it must be a letter, then up to 47 letters, digits, _ or -")
		case len(s.Command) > 0 && s.URL != "":
			fail("set command (a server over stdio) or url (over streamable HTTP), not both")
		case len(s.Command) == 0 && s.URL == "":
			fail("set command (a server over stdio) or url (a server over streamable HTTP)")
		}
		if s.Prefix != nil && !mcpPrefixPattern.MatchString(*s.Prefix) {
			fail("invalid prefix %s: it must be empty, or a letter then letters, digits, _ or -", quote(*s.Prefix))
		}
		for _, p := range slices.Concat(s.Allow, s.Deny) {
			if strings.Count(p, "[") != strings.Count(p, "]") {
				fail("bad tool pattern %s", quote(p))
			}
		}
		if s.LogLevel != "" && !slices.Contains(mcpLogLevels, s.LogLevel) {
			fail("log_level = %s: not an MCP log level (one of %s)", quote(s.LogLevel), strings.Join(mcpLogLevels, ", "))
		}
		if s.URL != "" && (s.Profile != "" || !reflect.ValueOf(s.Permissions).IsZero()) {
			fail("profile and permissions confine a server's command; a server over HTTP runs elsewhere")
		}
		if !reflect.ValueOf(s.OAuth).IsZero() {
			o := s.OAuth
			switch {
			case s.URL == "":
				fail("oauth authorizes a server over HTTP (url); this one runs a command")
			case o.ClientSecret != "" && o.ClientID == "":
				fail("oauth.client_secret needs oauth.client_id")
			case o.CallbackPort < 0 || o.CallbackPort > 65535:
				fail("oauth.callback_port %d is not a port (0 picks a free one)", o.CallbackPort)
			case o.ClientMetadataURL != "" && !strings.HasPrefix(o.ClientMetadataURL, "https://"):
				fail("oauth.client_metadata_url must be an https URL")
			}
		}
		for _, k := range slices.Sorted(maps.Keys(s.Env)) {
			if !envNamePattern.MatchString(k) {
				fail("env: %s is not a variable name", quote(k))
			}
		}
		checkEnv(s.Permissions.Env, fail)
		var unset []error
		expand := func(key, v string) string {
			return varPattern.ReplaceAllStringFunc(v, func(m string) string {
				if m == "$$" {
					return "$"
				}
				name := m[2 : len(m)-1]
				val, ok := lookup(name)
				if !ok {
					unset = append(unset, errorf("%s: ${%s} is not set in the environment", key, name))
				}
				return val
			})
		}
		r.Command = make([]string, len(s.Command))
		for i, a := range s.Command {
			r.Command[i] = expand("command", a)
		}
		r.Env = expandMap("env", s.Env, expand)
		r.Headers = expandMap("headers", s.Headers, expand)
		r.Cwd = expand("cwd", s.Cwd)
		r.URL = expand("url", s.URL)
		r.OAuth.ClientID = expand("oauth.client_id", s.OAuth.ClientID)
		r.OAuth.ClientSecret = expand("oauth.client_secret", s.OAuth.ClientSecret)
		r.OAuth.ClientMetadataURL = expand("oauth.client_metadata_url", s.OAuth.ClientMetadataURL)
		r.OAuth.Scopes = slices.Clone(s.OAuth.Scopes)
		switch {
		case len(unset) > 0 && s.Optional:
			r.Unavailable = join(unset)
		default:
			errs = append(errs, unset...)
		}
		out = append(out, r)
	}
	if err := joinSorted(errs); err != nil {
		return nil, err
	}
	return out, nil
}

func expandMap(key string, m map[string]string, expand func(key, v string) string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out[k] = expand(key+"."+k, m[k])
	}
	return out
}
