# Package ferry.authz decides one request against the IAM policy statements of the caller's tenancy
# (DESIGN section 5). It is embedded in iam/authz and prepared once; iam/authz writes the data and builds the input.
#
# The query is `data.ferry.authz.matched`: a request is allowed when at least one statement matches, and the
# matching statements explain the decision (the policy simulator shows them).
#
# data.tenancies[<tenancy id>], written whole by Engine.SetTenancy:
#   statements: [{index, policy_id, text, subjects, location, condition?}, ...] in load order: every statement,
#               including those whose location did not resolve (location null), which no index lists
#   three indexes, each <index>[<permission>]["<location id>|<subject>"]: entries for the statements that grant
#   <permission> to <subject> ("any-user" or "group:<name>") on the compartment <location id> and so on all its
#   descendants, if their condition holds. A statement's result is [index, policy_id, text]. iam/authz rewrites a
#   condition as clauses (any may hold) of comparisons (all must hold) and lists each clause:
#     grants:      statements without a condition: their result
#     conditional: the clauses of conditions: [result, relevant, required], relevant and required sets of facts
#                  (see below); and every statement of grants as a clause that always holds, [result, {}, {}]
#     conditions:  statements whose condition has too many clauses to list, whole: {result, condition}
#
# input (built by iam/authz for each request):
#   tenancy, permission, root: the first compartment of the target's path from the root (the tenancy id when the
#               target lies in the tenancy),
#   keys, conditional_keys, condition_keys (for the three indexes in that order): the keys
#               "<location>|<subject>" for locations on the target's path and subjects the caller answers to, leaving
#               out those under which the index lists nothing for the permission, which changes no decision and saves
#               looking them up here (absent when empty). A key that lists statements without a condition goes to
#               keys or, when any key lists clauses, to conditional_keys: both indexes list those statements, and
#               one rule reading the data once costs less than two
#   facts: for every condition variable the request has a value for, "<variable>" and "<variable>=<value>"
#               (present with conditional_keys)
#   vars: {<condition variable>: <value>}, omitting variables the request has no value for (present with
#               condition_keys)
#   facts and vars may leave out variables that no condition listed under the input's keys compares, and facts
#   may leave out "<variable>=<value>" facts that no clause lists as relevant, which changes no decision.
#
# A statement matches a request when it grants the permission to one of the caller's subjects on a compartment on
# the target's path, and its condition holds. The indexes answer the first three tests with one lookup per input
# key, so no rule iterates the tenancy's statements and a decision costs the same with 10 statements or 10,000
# (policy-performance.md: look data up by key, never search it).
package ferry.authz

# matched holds [statement index, policy id, statement text] for every statement that allows the request. Only
# data.tenancies[input.tenancy] is read, and the target must lie in that tenancy (its path starts at the tenancy's
# root compartment: input.root), so one tenancy's statements can never grant anything in another.
#
# Every expression costs the evaluator about a microsecond, so the rules do as few as they can: each reads the
# permission's index from the store once (a data reference is resolved from the root on every use) and then looks
# the input's keys up in it, and the first expression fails at once when the input has no keys for the rule.
matched contains result if {
	keys := input.keys
	input.root == input.tenancy
	grants := data.tenancies[input.tenancy].grants[input.permission]
	some key in keys
	some result in grants[key]
}

# A clause holds when the request's facts include every fact it requires and no other fact relevant to it: `v = 'x'`
# requires v=x; `v != 'x'` requires v (a value) and must not find v=x. One set intersection checks a whole clause.
matched contains result if {
	keys := input.conditional_keys
	input.root == input.tenancy
	conditional := data.tenancies[input.tenancy].conditional[input.permission]
	facts := input.facts
	some key in keys
	some [result, relevant, required] in conditional[key]
	facts & relevant == required
}

matched contains c.result if {
	keys := input.condition_keys
	input.root == input.tenancy
	conditions := data.tenancies[input.tenancy].conditions[input.permission]
	some key in keys
	some c in conditions[key]
	cond_0(c.condition)
}

# Rego has no recursion, so each nesting level of all/any has its own function; policy.MaxConditionDepth (4) is
# the deepest level the parser accepts and cond_4 is the last one here.
cond_0(c) if compare(c)

cond_0(c) if {
	c.op == "all"
	every x in c.args {
		cond_1(x)
	}
}

cond_0(c) if {
	c.op == "any"
	some x in c.args
	cond_1(x)
}

cond_1(c) if compare(c)

cond_1(c) if {
	c.op == "all"
	every x in c.args {
		cond_2(x)
	}
}

cond_1(c) if {
	c.op == "any"
	some x in c.args
	cond_2(x)
}

cond_2(c) if compare(c)

cond_2(c) if {
	c.op == "all"
	every x in c.args {
		cond_3(x)
	}
}

cond_2(c) if {
	c.op == "any"
	some x in c.args
	cond_3(x)
}

cond_3(c) if compare(c)

cond_3(c) if {
	c.op == "all"
	every x in c.args {
		cond_4(x)
	}
}

cond_3(c) if {
	c.op == "any"
	some x in c.args
	cond_4(x)
}

cond_4(c) if compare(c)

# A comparison on a variable the request has no value for is false for = and != alike (input.vars[...] is
# undefined), as in OCI.
compare(c) if {
	c.op == "="
	input.vars[c.var] == c.value
}

compare(c) if {
	c.op == "!="
	input.vars[c.var] != c.value
}
