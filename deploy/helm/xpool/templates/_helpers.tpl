{{/* Common labels. */}}
{{- define "xpool.labels" -}}
app.kubernetes.io/name: xpool
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/*
The webhook's self-signed serving certificate, generated once per render and shared by the Secret and the
MutatingWebhookConfiguration's caBundle (Helm's genCA / genSignedCert; cached in a dict on the root context).
*/}}
{{- define "xpool.webhookTls" -}}
{{- if not .webhookTls -}}
{{- $cn := printf "%s-webhook.%s.svc" .Release.Name .Release.Namespace -}}
{{- $ca := genCA "xpool-webhook-ca" (int .Values.webhook.certValidityDays) -}}
{{- $cert := genSignedCert $cn nil (list $cn) (int .Values.webhook.certValidityDays) $ca -}}
{{- $_ := set . "webhookTls" (dict "ca" $ca.Cert "cert" $cert.Cert "key" $cert.Key) -}}
{{- end -}}
{{- end -}}
{{- define "xpool.webhookCaBundle" -}}
{{- include "xpool.webhookTls" . -}}{{ .webhookTls.ca | b64enc }}
{{- end -}}
{{- define "xpool.webhookCert" -}}
{{- include "xpool.webhookTls" . -}}{{ .webhookTls.cert | b64enc }}
{{- end -}}
{{- define "xpool.webhookKey" -}}
{{- include "xpool.webhookTls" . -}}{{ .webhookTls.key | b64enc }}
{{- end -}}
