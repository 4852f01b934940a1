"""Claude on Amazon Bedrock and Google Vertex AI, through the SDK's own clients
(``anthropic.AnthropicBedrock``, ``anthropic.AnthropicVertex``), which read the region, the
project and the credentials from the environment as they document; calls, retries and the
rate gate are the Anthropic API's (``AnthropicProvider``).

Through the SDK neither platform has Message Batches, and Bedrock has no token counting:
their capabilities say so, rather than inheriting the Anthropic API's. What is missing (a
region, a project, credentials, the extra that signs the requests) is one line naming the
variable or the package, on which a run that is to record stops instead of its first call;
credentials go to the SDK as it reads them, and no header is ever written anywhere.
"""

from __future__ import annotations

import os
from typing import Any

from pytest_prompteval.providers.anthropic import AnthropicProvider
from pytest_prompteval.providers.base import Capabilities


class BedrockProvider(AnthropicProvider):
    label = "bedrock"
    name = "Amazon Bedrock"
    capabilities = Capabilities()
    request_id_header = "x-amzn-requestid"

    def missing(self) -> str | None:
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        bearer = os.environ.get("AWS_BEARER_TOKEN_BEDROCK")
        try:
            import boto3
            import botocore.exceptions
        except ImportError:
            if bearer and region:
                return None  # a bearer token signs nothing: the SDK needs no boto3
            return (
                "Amazon Bedrock needs boto3 to find its region and sign requests: "
                "pip install 'pytest-prompteval[bedrock]'"
            )
        try:
            session = boto3.Session()
            if not (region or session.region_name):
                return (
                    "AWS_REGION is not set (Amazon Bedrock's region; or a region in the AWS "
                    "profile)"
                )
            if bearer or session.get_credentials() is not None:
                return None
        except botocore.exceptions.BotoCoreError as exc:  # a profile that is not there
            return f"AWS configuration: {exc}"
        return (
            "no AWS credentials found for Amazon Bedrock: set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or AWS_BEARER_TOKEN_BEDROCK"
        )

    def secrets(self) -> tuple[str | None, ...]:
        try:  # as the SDK found them: from a profile, a role, the environment
            import boto3

            found = boto3.Session().get_credentials()
        except Exception:  # no credentials to scrub, then
            return ()
        if found is None:
            return ()
        frozen = found.get_frozen_credentials()
        return (frozen.access_key, frozen.secret_key, frozen.token)

    def new_client(self) -> Any:
        import anthropic

        return anthropic.AnthropicBedrock(max_retries=0, timeout=self.timeout)


class VertexProvider(AnthropicProvider):
    label = "vertex"
    name = "Google Vertex AI"
    capabilities = Capabilities(token_counting=True)

    def missing(self) -> str | None:
        if not os.environ.get("CLOUD_ML_REGION"):
            return (
                "CLOUD_ML_REGION is not set (Google Vertex AI's region: us-east5, "
                "europe-west1, global, ...)"
            )
        project = os.environ.get("ANTHROPIC_VERTEX_PROJECT_ID")
        if not os.environ.get("ANTHROPIC_VERTEX_ACCESS_TOKEN"):
            try:
                import google.auth
                import google.auth.exceptions
            except ImportError:
                return (
                    "Google Vertex AI needs google-auth for its default credentials: pip install "
                    "'pytest-prompteval[vertex]' (or set ANTHROPIC_VERTEX_ACCESS_TOKEN)"
                )
            try:
                _, found = google.auth.default()
            except (google.auth.exceptions.GoogleAuthError, ValueError, OSError):
                return (
                    "no Google credentials found for Vertex AI: run `gcloud auth "
                    "application-default login`, set GOOGLE_APPLICATION_CREDENTIALS, or set "
                    "ANTHROPIC_VERTEX_ACCESS_TOKEN"
                )
            project = project or found
        if not project:
            return "ANTHROPIC_VERTEX_PROJECT_ID is not set (Google Vertex AI's project)"
        return None

    def secrets(self) -> tuple[str | None, ...]:
        credentials = getattr(self._client, "credentials", None)  # google-auth's, once used
        return (getattr(credentials, "token", None),)

    def new_client(self) -> Any:
        import anthropic

        return anthropic.AnthropicVertex(
            access_token=os.environ.get("ANTHROPIC_VERTEX_ACCESS_TOKEN") or None,
            max_retries=0,
            timeout=self.timeout,
        )
