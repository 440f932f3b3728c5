package console

import "github.com/ferry-mq/ferry/openapi/sdk"

func sdkListQueues(compartmentID string) sdk.ListQueuesParams {
	return sdk.ListQueuesParams{CompartmentId: &compartmentID}
}

func sdkListGroups() sdk.ListConsumerGroupsParams { return sdk.ListConsumerGroupsParams{} }
