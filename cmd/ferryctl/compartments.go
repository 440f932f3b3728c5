package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

func (a *app) compartmentCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "compartment", Short: "Compartments: the tree that holds queues and policies"}

	create := &cobra.Command{
		Use:   "create --name NAME [--compartment-id PARENT]",
		Short: "Create a compartment (in the root compartment unless --compartment-id names its parent)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			parent, err := a.defaultCompartment(flagString(cmd, "compartment-id"))
			if err != nil {
				return err
			}
			body := sdk.CreateCompartmentDetails{CompartmentId: parent, Name: flagString(cmd, "name"),
				Description: optString(cmd, "description"), FreeformTags: optTags(cmd, "freeform-tags")}
			r, err := check(c.CreateCompartmentWithResponse(cmd.Context(), &sdk.CreateCompartmentParams{
				OpcRetryToken: optString(cmd, "opc-retry-token")}, body))
			if err != nil {
				return err
			}
			return a.emit(compartmentView, r.body)
		},
	}
	create.Flags().String("compartment-id", "", "the parent compartment (default: the root compartment)")
	create.Flags().String("name", "", "the name, unique among its siblings")
	create.Flags().String("description", "", "a description")
	create.Flags().StringToString("freeform-tags", nil, "tags as key=value (repeatable)")
	retryTokenFlag(create)
	_ = create.MarkFlagRequired("name")

	get := idCommand("get COMPARTMENT_ID", "Get a compartment", "compartment-id", "compartment",
		func(cmd *cobra.Command, id string) error {
			return a.show(compartmentView, func(c *sdk.ClientWithResponses) (*reply, error) {
				return check(c.GetCompartmentWithResponse(cmd.Context(), id, &sdk.GetCompartmentParams{}))
			})
		})

	var lf listFlags
	list := &cobra.Command{
		Use:   "list [--compartment-id PARENT]",
		Short: "List the compartments of a compartment (default: the root compartment)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			parent, err := a.defaultCompartment(flagString(cmd, "compartment-id"))
			if err != nil {
				return err
			}
			p := sdk.ListCompartmentsParams{CompartmentId: parent, CompartmentIdInSubtree: optBool(cmd, "compartment-id-in-subtree"),
				Name: optString(cmd, "name"), LifecycleState: lifecycleParam(cmd), Limit: lf.limitParam(cmd), SortOrder: lf.sortOrderParam()}
			p.SortBy = sortByParam[sdk.ListCompartmentsParamsSortBy](cmd)
			return a.list(cmd.Context(), compartmentView.listOf("items"), &lf, func(ctx context.Context, c *sdk.ClientWithResponses, page *string) (*reply, error) {
				p.Page = page
				return check(c.ListCompartmentsWithResponse(ctx, &p))
			})
		},
	}
	list.Flags().String("compartment-id", "", "the parent compartment (default: the root compartment)")
	list.Flags().Bool("compartment-id-in-subtree", false, "list the whole subtree")
	list.Flags().String("name", "", "only the compartment of this name")
	lifecycleFlag(list)
	lf.register(list, "timeCreated", "name")

	update := idCommand("update COMPARTMENT_ID", "Rename a compartment or change its description or tags", "compartment-id", "compartment",
		func(cmd *cobra.Command, id string) error {
			return a.show(compartmentView, func(c *sdk.ClientWithResponses) (*reply, error) {
				body := sdk.UpdateCompartmentDetails{Name: optString(cmd, "name"), Description: optString(cmd, "description"),
					FreeformTags: optTags(cmd, "freeform-tags")}
				return check(c.UpdateCompartmentWithResponse(cmd.Context(), id, &sdk.UpdateCompartmentParams{IfMatch: optString(cmd, "if-match")}, body))
			})
		})
	update.Flags().String("name", "", "the new name")
	update.Flags().String("description", "", "the new description")
	update.Flags().StringToString("freeform-tags", nil, "the new tags as key=value (repeatable; replaces them)")
	ifMatchFlag(update)

	del := idCommand("delete COMPARTMENT_ID", "Delete an empty compartment", "compartment-id", "compartment",
		func(cmd *cobra.Command, id string) error {
			_, err := a.call(func(c *sdk.ClientWithResponses) (*reply, error) {
				return check(c.DeleteCompartmentWithResponse(cmd.Context(), id, &sdk.DeleteCompartmentParams{IfMatch: optString(cmd, "if-match")}))
			})
			return err
		})
	ifMatchFlag(del)

	cmd.AddCommand(create, get, list, update, del)
	return cmd
}

// flagString is a string flag's value ("" when left out).
func flagString(cmd *cobra.Command, name string) string {
	v, _ := cmd.Flags().GetString(name)
	return v
}

func (a *app) policyCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "policy", Short: "IAM policies, and the policy simulator"}

	create := &cobra.Command{
		Use:   "create --name NAME --statements STATEMENT... [--compartment-id ID]",
		Short: "Create a policy (in the root compartment unless --compartment-id says otherwise)",
		Example: `  ferryctl policy create --name producers \
    --statements "Allow group Producers to use queue-push in tenancy"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			compartment, err := a.defaultCompartment(flagString(cmd, "compartment-id"))
			if err != nil {
				return err
			}
			statements, _ := cmd.Flags().GetStringArray("statements")
			body := sdk.CreatePolicyDetails{CompartmentId: compartment, Name: flagString(cmd, "name"), Statements: statements,
				Description: optString(cmd, "description"), FreeformTags: optTags(cmd, "freeform-tags")}
			r, err := check(c.CreatePolicyWithResponse(cmd.Context(), &sdk.CreatePolicyParams{OpcRetryToken: optString(cmd, "opc-retry-token")}, body))
			if err != nil {
				return err
			}
			return a.emit(policyView, r.body)
		},
	}
	create.Flags().String("compartment-id", "", "the compartment the policy is attached to (default: the root compartment)")
	create.Flags().String("name", "", "the name")
	create.Flags().StringArray("statements", nil, "a statement (repeat the flag for more)")
	create.Flags().String("description", "", "a description")
	create.Flags().StringToString("freeform-tags", nil, "tags as key=value (repeatable)")
	retryTokenFlag(create)
	_ = create.MarkFlagRequired("name")
	_ = create.MarkFlagRequired("statements")

	get := idCommand("get POLICY_ID", "Get a policy", "policy-id", "policy", func(cmd *cobra.Command, id string) error {
		return a.show(policyView, func(c *sdk.ClientWithResponses) (*reply, error) {
			return check(c.GetPolicyWithResponse(cmd.Context(), id, &sdk.GetPolicyParams{}))
		})
	})

	var lf listFlags
	list := &cobra.Command{
		Use:   "list [--compartment-id ID]",
		Short: "List the policies of a compartment (default: the root compartment)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			compartment, err := a.defaultCompartment(flagString(cmd, "compartment-id"))
			if err != nil {
				return err
			}
			p := sdk.ListPoliciesParams{CompartmentId: compartment, Name: optString(cmd, "name"), LifecycleState: lifecycleParam(cmd),
				Limit: lf.limitParam(cmd), SortOrder: lf.sortOrderParam()}
			p.SortBy = sortByParam[sdk.ListPoliciesParamsSortBy](cmd)
			return a.list(cmd.Context(), policyView.listOf("items"), &lf, func(ctx context.Context, c *sdk.ClientWithResponses, page *string) (*reply, error) {
				p.Page = page
				return check(c.ListPoliciesWithResponse(ctx, &p))
			})
		},
	}
	list.Flags().String("compartment-id", "", "the compartment (default: the root compartment)")
	list.Flags().String("name", "", "only the policy of this name")
	lifecycleFlag(list)
	lf.register(list, "timeCreated", "name")

	update := idCommand("update POLICY_ID", "Change a policy's statements, name, description or tags", "policy-id", "policy",
		func(cmd *cobra.Command, id string) error {
			return a.show(policyView, func(c *sdk.ClientWithResponses) (*reply, error) {
				body := sdk.UpdatePolicyDetails{Name: optString(cmd, "name"), Description: optString(cmd, "description"),
					Statements: optStrings(cmd, "statements"), FreeformTags: optTags(cmd, "freeform-tags")}
				return check(c.UpdatePolicyWithResponse(cmd.Context(), id, &sdk.UpdatePolicyParams{IfMatch: optString(cmd, "if-match")}, body))
			})
		})
	update.Flags().String("name", "", "the new name")
	update.Flags().StringArray("statements", nil, "the new statements (repeat the flag; replaces them all)")
	update.Flags().String("description", "", "the new description")
	update.Flags().StringToString("freeform-tags", nil, "the new tags as key=value (repeatable; replaces them)")
	ifMatchFlag(update)

	del := idCommand("delete POLICY_ID", "Delete a policy", "policy-id", "policy", func(cmd *cobra.Command, id string) error {
		_, err := a.call(func(c *sdk.ClientWithResponses) (*reply, error) {
			return check(c.DeletePolicyWithResponse(cmd.Context(), id, &sdk.DeletePolicyParams{IfMatch: optString(cmd, "if-match")}))
		})
		return err
	})
	ifMatchFlag(del)

	cmd.AddCommand(create, get, list, update, del, a.simulateCommand())
	return cmd
}

func (a *app) simulateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "simulate --subject S [--groups G]... --permission P [--compartment-id|--queue-id|--consumer-group-id ID]",
		Short: "Ask whether a subject in given groups holds a permission, and which statements decide it",
		Long: `Ask the policy simulator (POST /actions/authorize) whether a subject in the given groups holds a
permission on a compartment, a queue or a consumer group (default: the root compartment), and which
statements allow it. Needs read policies. Exit status 0 whether or not it is allowed: read "allowed".`,
		Example: `  ferryctl policy simulate --subject alice --groups Producers --permission QUEUE_PUSH --queue-id ocid1.queue…`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			body := sdk.AuthorizeDetails{Subject: flagString(cmd, "subject"), Permission: sdk.AuthorizeDetailsPermission(flagString(cmd, "permission")),
				Groups: optStrings(cmd, "groups"), QueueId: optString(cmd, "queue-id"), ConsumerGroupId: optString(cmd, "consumer-group-id"),
				CompartmentId: optString(cmd, "compartment-id")}
			if body.QueueId == nil && body.ConsumerGroupId == nil && body.CompartmentId == nil {
				root, err := a.defaultCompartment("")
				if err != nil {
					return err
				}
				body.CompartmentId = &root
			}
			r, err := check(c.AuthorizeWithResponse(cmd.Context(), &sdk.AuthorizeParams{}, body))
			if err != nil {
				return err
			}
			return a.emit(authorizeView, r.body)
		},
	}
	cmd.Flags().String("subject", "", "the subject (the token's sub)")
	cmd.Flags().StringArray("groups", nil, "a group of the subject (repeat the flag for more)")
	cmd.Flags().String("permission", "", "the permission, e.g. QUEUE_PUSH, QUEUE_PULL, QUEUE_CREATE, POLICY_READ")
	cmd.Flags().String("compartment-id", "", "the target compartment")
	cmd.Flags().String("queue-id", "", "the target queue")
	cmd.Flags().String("consumer-group-id", "", "the target consumer group")
	_ = cmd.MarkFlagRequired("subject")
	_ = cmd.MarkFlagRequired("permission")
	cmd.MarkFlagsMutuallyExclusive("compartment-id", "queue-id", "consumer-group-id")
	_ = cmd.RegisterFlagCompletionFunc("permission", fixedCompletion(permissions...))
	return cmd
}

// permissions are the API's AuthorizeDetails.permission values.
var permissions = []string{
	string(sdk.AuthorizeDetailsPermissionCOMPARTMENTINSPECT), string(sdk.AuthorizeDetailsPermissionCOMPARTMENTREAD),
	string(sdk.AuthorizeDetailsPermissionCOMPARTMENTUPDATE), string(sdk.AuthorizeDetailsPermissionCOMPARTMENTCREATE),
	string(sdk.AuthorizeDetailsPermissionCOMPARTMENTDELETE), string(sdk.AuthorizeDetailsPermissionPOLICYINSPECT),
	string(sdk.AuthorizeDetailsPermissionPOLICYREAD), string(sdk.AuthorizeDetailsPermissionPOLICYUPDATE),
	string(sdk.AuthorizeDetailsPermissionPOLICYCREATE), string(sdk.AuthorizeDetailsPermissionPOLICYDELETE),
	string(sdk.AuthorizeDetailsPermissionQUEUEINSPECT), string(sdk.AuthorizeDetailsPermissionQUEUEREAD),
	string(sdk.AuthorizeDetailsPermissionQUEUEUPDATE), string(sdk.AuthorizeDetailsPermissionQUEUECREATE),
	string(sdk.AuthorizeDetailsPermissionQUEUEDELETE), string(sdk.AuthorizeDetailsPermissionQUEUEMOVE),
	string(sdk.AuthorizeDetailsPermissionQUEUEPURGE), string(sdk.AuthorizeDetailsPermissionQUEUEPUSH),
	string(sdk.AuthorizeDetailsPermissionQUEUEPULL),
}
