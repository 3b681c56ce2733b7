// Package tool holds the types every part of lathe shares: what a model sees of
// a tool ([Definition]), one request to run it ([Call]), what comes back
// ([Outcome]: a [Result] or a [Question]), the kinds of failure ([ErrorKind],
// [Error]) and the small [Runtime] interface that every way of running a tool
// implements.
//
// The package imports only the standard library, so runtimes, faces and
// third-party code can depend on it without pulling in the engine.
package tool
