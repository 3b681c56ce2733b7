package mcpconformance

import (
	"os"
	"testing"
	"time"
)

// TestSummary: both shapes of the suite's summary are read. A run of one
// scenario, as [again] makes to try a failed scenario once more, prints
// only the checks' count; reading it as a run of several once failed the
// test with "printed no summary" where the scenario had passed.
func TestSummary(t *testing.T) {
	suite := []byte("=== SUITE SUMMARY ===\n\n✓ initialize: 1 passed, 0 failed\n" +
		"✗ auth/scope-step-up: 20 passed, 3 failed\n\nTotal: 21 passed, 3 failed, 0 warnings\n")
	one := []byte("...\n\nTest Results:\nPassed: 14/14, 0 failed, 0 warnings\n\n✅ OVERALL: PASSED\n")
	oneFailed := []byte("Test Results:\nPassed: 12/14, 2 failed, 0 warnings\n")
	for _, c := range []struct {
		name     string
		out      []byte
		scenario string
		want     map[string]outcome
	}{
		{"suite", suite, "", map[string]outcome{"initialize": {passed: 1}, "auth/scope-step-up": {passed: 20, failed: 3}}},
		{"one scenario", one, "auth/scope-omitted-when-undefined",
			map[string]outcome{"auth/scope-omitted-when-undefined": {passed: 14}}},
		{"one scenario failed", oneFailed, "tools_call", map[string]outcome{"tools_call": {passed: 12, failed: 2}}},
		{"one scenario, not named", one, "", map[string]outcome{}},
		{"nothing", []byte("Error: spawn ENOENT\n"), "initialize", map[string]outcome{}},
	} {
		got := summary(c.out, c.scenario)
		if len(got) != len(c.want) {
			t.Errorf("%s: read %v, want %v", c.name, got, c.want)
			continue
		}
		for k, w := range c.want {
			if g, ok := got[k]; !ok || g.passed != w.passed || g.failed != w.failed {
				t.Errorf("%s: %s read as %+v (present %v), want %+v", c.name, k, g, ok, w)
			}
		}
	}
}

// TestOneScenario: a run of one scenario alone, as [again] makes after a
// failure, is read as that scenario's outcome.
func TestOneScenario(t *testing.T) {
	node, script := suite(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(roleEnv, "client")
	const name = "auth/scope-omitted-when-undefined"
	res := runSuite(t, 2*time.Minute, node, script, name, "client", "--scenario", name, "--timeout", "30000",
		"--command", exe+" -test.run=^$")
	if o, ok := res[name]; !ok || o.passed == 0 {
		t.Errorf("the run of %s alone was read as %+v", name, res)
	}
}
