package dataplane

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ferry-mq/ferry/openapi/api"
	"github.com/ferry-mq/ferry/services/apierror"
	"github.com/ferry-mq/ferry/services/httpapi"
	"github.com/ferry-mq/ferry/services/metering"
)

// GetQueueMetrics returns time series of a queue's (or a consumer group's) per-minute rollups.
func (h *Handlers) GetQueueMetrics(c *gin.Context, queueID api.QueueIdPath, params api.GetQueueMetricsParams) {
	ctx := c.Request.Context()
	groupNo, groupID, err := h.svc.MetricsTarget(ctx, tenancyOf(c), queueID, httpapi.Deref(params.ConsumerGroupId))
	if err != nil {
		apierror.Write(c, err)
		return
	}
	q := metering.Query{GroupNo: groupNo, Start: httpapi.Deref(params.Start), End: httpapi.Deref(params.End)}
	for _, n := range httpapi.Deref(params.Names) {
		q.Names = append(q.Names, string(n))
	}
	resolution := string(httpapi.Deref(params.Resolution))
	if resolution == "" {
		resolution = "1m"
	}
	q.Resolution = metering.Resolutions[resolution] // the validator admits only the spec's values
	aggregation := api.QueueMetricsAggregation(httpapi.Deref(params.Aggregation))
	if aggregation == "" {
		aggregation = "max"
	}
	q.Mean = aggregation == "mean"
	res, err := h.meter.Series(ctx, queueID, q)
	if err != nil {
		apierror.Write(c, err)
		return
	}
	out := api.QueueMetrics{QueueId: queueID, Resolution: api.QueueMetricsResolution(resolution), Aggregation: aggregation,
		Start: res.Start, End: res.End, Items: make([]api.MetricSeries, len(res.Series))}
	dims := api.MetricSeries{}.Dimensions
	dims.QueueId = queueID
	if groupID != "" {
		out.ConsumerGroupId, dims.ConsumerGroupId = &groupID, &groupID
	}
	for i, s := range res.Series {
		points := make([]api.MetricPoint, len(s.Points))
		for k, p := range s.Points {
			points[k] = api.MetricPoint{Timestamp: p.Timestamp, Value: p.Value}
		}
		out.Items[i] = api.MetricSeries{Name: api.QueueMetricName(s.Name), Kind: api.MetricSeriesKind(s.Kind),
			Unit: s.Unit, Dimensions: dims, Points: points}
	}
	c.JSON(http.StatusOK, out)
}
