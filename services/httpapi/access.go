package httpapi

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/gin-gonic/gin"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/iam"
	"github.com/ferry-mq/ferry/services/apierror"
)

// Authenticate identifies the caller of every request except the public paths and unknown routes (which answer
// 404 without a token), and puts the Principal in the request context; 401 NotAuthenticated otherwise.
func Authenticate(callers *iam.Callers, public func(path string) bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.FullPath() == "" || public(c.Request.URL.Path) {
			c.Next()
			return
		}
		p, err := callers.Identify(c.Request.Context(), c.Request.Header.Values("Authorization"))
		if err != nil {
			apierror.Write(c, err)
			return
		}
		c.Request = c.Request.WithContext(iam.WithPrincipal(c.Request.Context(), p))
		c.Next()
	}
}

// Authorize decides every authenticated request with IAM (after validation: the ids it reads are well formed).
// operationOf maps a route ("METHOD /path") to its operationId. A denial answers 404 NotAuthorizedOrNotFound,
// exactly like a missing resource.
func Authorize(access *iam.Access, operationOf func(method, route string) string) gin.HandlerFunc {
	return func(c *gin.Context) {
		p := iam.PrincipalFrom(c.Request.Context())
		route := c.FullPath()
		if p == nil || route == "" {
			c.Next() // public operations and unknown routes
			return
		}
		req, err := accessRequest(c, operationOf(c.Request.Method, route))
		if err == nil {
			var ctx = c.Request.Context()
			if ctx, err = access.Authorize(ctx, p, req); err == nil {
				c.Request = c.Request.WithContext(ctx)
			}
		}
		if err != nil {
			apierror.Write(c, err)
			return
		}
		c.Next()
	}
}

// accessRequest reads what IAM needs of a request: the ids its operation's target kind names, from the path, the
// query or the body.
func accessRequest(c *gin.Context, operation string) (iam.Request, error) {
	req := iam.Request{Operation: operation}
	op, ok := iam.Operations[operation]
	if !ok {
		return req, nil // Authorize reports the missing mapping
	}
	switch op.Target {
	case iam.TargetCompartmentPath:
		req.CompartmentID = c.Param("compartmentId")
	case iam.TargetCompartmentQuery:
		req.CompartmentID, req.InSubtree = c.Query("compartmentId"), c.Query("compartmentIdInSubtree") == "true"
		req.QueueID, req.WorkRequestID = c.Query("id"), c.Query("workRequestId") // lists of one, without a compartment
	case iam.TargetQueuePath:
		req.QueueID, req.ConsumerGroupRef = c.Param("queueId"), c.Query("consumerGroupId")
	case iam.TargetQueueQuery:
		req.QueueID = c.Query("queueId")
	case iam.TargetConsumerGroupPath:
		req.ConsumerGroupID = c.Param("consumerGroupId")
	case iam.TargetWorkRequestPath, iam.TargetCompartmentDeletionPath:
		req.WorkRequestID = c.Param("workRequestId")
	case iam.TargetPolicyPath:
		req.PolicyID = c.Param("policyId")
	}
	if op.Target == iam.TargetCompartmentBody || op.Target == iam.TargetQueueBody || op.AlsoBodyCompartment {
		body, err := peekTargetBody(c)
		if err != nil {
			return req, err
		}
		switch {
		case op.AlsoBodyCompartment:
			req.DestinationCompartmentID = body.CompartmentID
		case op.Target == iam.TargetQueueBody:
			req.QueueID = body.QueueID
		default:
			req.CompartmentID = body.CompartmentID
		}
	}
	return req, nil
}

// targetBody is the part of a request body that names its target.
type targetBody struct {
	CompartmentID string `json:"compartmentId"`
	QueueID       string `json:"queueId"`
}

// peekTargetBody reads the (already validated) JSON body's target fields and puts the body back for the handler.
func peekTargetBody(c *gin.Context) (targetBody, error) {
	var t targetBody
	if c.Request.Body == nil {
		return t, fault.ErrNotFound
	}
	raw, err := io.ReadAll(c.Request.Body)
	if err != nil {
		return t, fault.InvalidParameter("body: %v", err)
	}
	c.Request.Body = io.NopCloser(bytes.NewReader(raw))
	if err := json.Unmarshal(raw, &t); err != nil {
		return t, fault.InvalidParameter("body: the request body is not valid JSON")
	}
	return t, nil
}
