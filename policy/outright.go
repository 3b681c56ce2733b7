package policy

import "github.com/lathe-tools/lathe/tool"

// DeniesOutright reports whether p denies every call of def, whatever its
// arguments: a deny rule without an argument pattern matches the tool, or
// the tool's source defaults to deny and no rule that could allow or ask
// names it. A tool denied only for some arguments, or one that asks, is not
// denied outright. The decision returned is the one a call would get.
//
// A listing for a model (code mode's declarations) leaves such tools out:
// naming a tool that can never run only invites calls that fail.
func (p *Policy) DeniesOutright(def *tool.Definition) (Decision, bool) {
	named := false
	for i := range p.Rules {
		r := &p.Rules[i]
		if r.Operation != "" || !match(r.Tool, def.Name) {
			continue
		}
		if r.Approval == Deny && r.Args == "" {
			return Decision{Approval: Deny, By: "rule", Rule: r, Reason: "the rule " + r.String() + " denies it"}, true
		}
		if r.Approval != Deny {
			named = true
		}
	}
	if named {
		return Decision{}, false
	}
	for i := range p.Defaults {
		if s := &p.Defaults[i]; s.Source == def.Source && def.Source != "" && s.Approval == Deny {
			return Decision{Approval: Deny, By: "source", Default: s, Reason: s.String()}, true
		}
	}
	return Decision{}, false
}
