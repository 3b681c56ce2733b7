package server

import (
	"context"
	"testing"
)

type otherKey struct{}

// TestCallContext: a call's context carries its fastCall as
// context.WithValue did, passes every other key to its parent, and ends,
// with all that is derived from it, when its parent does.
func TestCallContext(t *testing.T) {
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), otherKey{}, "parent's"))
	cc := &callContext{Context: parent}
	var ctx context.Context = cc
	if fc, ok := ctx.Value(callKey{}).(*fastCall); !ok || fc != &cc.fc {
		t.Fatalf("Value(callKey{}) = %v, want the call's fastCall", ctx.Value(callKey{}))
	}
	if v := ctx.Value(otherKey{}); v != "parent's" {
		t.Fatalf("Value(otherKey{}) = %v, want the parent's", v)
	}
	if v := context.WithoutCancel(ctx).Value(callKey{}); v != &cc.fc {
		t.Fatalf("WithoutCancel: Value(callKey{}) = %v", v)
	}
	child, stop := context.WithCancel(ctx)
	defer stop()
	ended := make(chan struct{})
	context.AfterFunc(ctx, func() { close(ended) })
	cancel()
	<-child.Done()
	<-ended
	if child.Err() != context.Canceled || ctx.Err() != context.Canceled {
		t.Fatalf("after the parent's end: %v, %v", child.Err(), ctx.Err())
	}
}
