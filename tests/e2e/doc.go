// Package e2e is the plumbing of ferry's end-to-end tests (tests/ and tests/bench): a Client over the generated
// SDK whose helpers create compartments, queues, groups and policies, put, get and delete messages, and require
// the answers; builders of messages and call options; and the checks of error answers. The server side (starting
// nodes, reading their database, driving their background work) is tests/testserver's.
//
// Every helper that takes a testing.TB fails the test on an unexpected answer, so that scenarios read as
// scenarios.
package e2e
