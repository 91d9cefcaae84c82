package main

import (
	"encoding/json"
	"fmt"
	"os"
)

// dashboard is the part of a Grafana dashboard that is drawn.
type dashboard struct {
	Title  string  `json:"title"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID          int    `json:"id"`
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	GridPos     struct {
		X, Y, W, H int
	} `json:"gridPos"`
	Targets []struct {
		RefID        string `json:"refId"`
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
		Instant      bool   `json:"instant"`
	} `json:"targets"`
	FieldConfig struct {
		Defaults  fieldConfig `json:"defaults"`
		Overrides []struct {
			Matcher struct {
				ID      string `json:"id"`
				Options string `json:"options"`
			} `json:"matcher"`
			Properties []struct {
				ID    string          `json:"id"`
				Value json.RawMessage `json:"value"`
			} `json:"properties"`
		} `json:"overrides"`
	} `json:"fieldConfig"`
	Options struct {
		ColorMode string `json:"colorMode"`
		GraphMode string `json:"graphMode"`
		TextMode  string `json:"textMode"`
	} `json:"options"`
}

// fieldConfig is a series' display settings: the panel's defaults with its overrides applied.
type fieldConfig struct {
	Unit    string   `json:"unit"`
	Min     *float64 `json:"min"`
	Max     *float64 `json:"max"`
	NoValue string   `json:"noValue"`
	Color   struct {
		Mode       string `json:"mode"`
		FixedColor string `json:"fixedColor"`
	} `json:"color"`
	Thresholds struct {
		Steps []struct {
			Color string   `json:"color"`
			Value *float64 `json:"value"`
		} `json:"steps"`
	} `json:"thresholds"`
	Mappings []struct {
		Options map[string]struct {
			Text  string `json:"text"`
			Color string `json:"color"`
		} `json:"options"`
	} `json:"mappings"`
	Custom struct {
		AxisLabel     string  `json:"axisLabel"`
		AxisPlacement string  `json:"axisPlacement"`
		FillOpacity   float64 `json:"fillOpacity"`
		LineWidth     float64 `json:"lineWidth"`
		LineStyle     struct {
			Fill string `json:"fill"`
		} `json:"lineStyle"`
		Stacking struct {
			Mode string `json:"mode"`
		} `json:"stacking"`
		ThresholdsStyle struct {
			Mode string `json:"mode"`
		} `json:"thresholdsStyle"`
	} `json:"custom"`
}

func readDashboard(path string) (dashboard, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return dashboard{}, fmt.Errorf("dashshot: %w (run from the repository's root, or set -dashboard)", err)
	}
	var d dashboard
	if err := json.Unmarshal(src, &d); err != nil {
		return dashboard{}, fmt.Errorf("dashshot: %s: %w", path, err)
	}
	return d, nil
}
